/** The pages shown instead of the portal: plain words, no error codes, and what to do next. */

function askForLink(brandName: string | null): string {
  return brandName ? `Ask for a new link from ${brandName}.` : 'Ask for a new link where you got this one.';
}

/** The link was refused: used, expired, revoked or unknown. `message` is the API's own words. */
export function RefusedLinkPage({ message, brandName }: { message: string; brandName: string | null }) {
  return (
    <main id="main" class="ended">
      <h1>This link does not open the portal</h1>
      <p>{message}</p>
      <p>{askForLink(brandName)}</p>
    </main>
  );
}

/** No session, or it ended (signed out, expired, revoked). */
export function SessionEndedPage({
  brandName,
  signedOut,
}: {
  brandName: string | null;
  signedOut?: boolean;
}) {
  return (
    <main id="main" class="ended">
      <h1>Your session has ended</h1>
      {signedOut ? <p>You signed out.</p> : null}
      <p>To come back, open a new link to the portal. {askForLink(brandName)}</p>
    </main>
  );
}

/** The portal could not start for another reason (its server failed, the network is down). */
export function StartFailedPage({ message }: { message: string }) {
  return (
    <main id="main" class="ended">
      <h1>The portal could not start</h1>
      <p>{message}</p>
      <p>Reload the page to try again.</p>
    </main>
  );
}

/** This browser opened another portal session (a link in another tab) after this page started. */
export function SessionReplacedPage() {
  return (
    <main id="main" class="ended">
      <h1>This browser switched to another session</h1>
      <p>A portal link opened in another tab or window, and this browser now uses its session.</p>
      <p>
        <button type="button" class="primary" onClick={() => location.reload()}>
          Reload to continue
        </button>
      </p>
    </main>
  );
}

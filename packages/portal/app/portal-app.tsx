import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { PortalPageConfig } from '../src/page-config.js';
import { ApiClient, type ApiError } from './api-client.js';
import type { PortalPermission, PortalSessionView } from './api-types.js';
import { CatalogPage } from './catalog-page.js';
import { ChooseAccountPage } from './choose-account.js';
import { formatDate } from './dates.js';
import { DeliveryPage } from './delivery-page.js';
import { RefusedLinkPage, SessionEndedPage, SessionReplacedPage, StartFailedPage } from './ended-page.js';
import { EndpointPage } from './endpoint-page.js';
import { useHashRoute } from './hash-route.js';
import { KeysPage } from './keys-page.js';
import { ErrorNotice } from './notices.js';
import { PortalContext, usePortal } from './portal-context.js';
import { hrefOf, parseRoute, type Route } from './routes.js';
import { announceSession, onSessionAnnounced } from './session-channel.js';
import { hasLinkToken, type SessionStart, startSession } from './session-start.js';
import { asApiError } from './use-submit.js';
import { WebhooksPage } from './webhooks-page.js';

type Phase = SessionStart | { state: 'starting' } | { state: 'signed-out' } | { state: 'replaced' };

/** What each page needs: a page the session may not read is not offered. */
const PAGE_PERMISSION: Record<Route['page'], PortalPermission | null> = {
  keys: 'keys:read',
  webhooks: 'webhooks:read',
  webhook: 'webhooks:read',
  delivery: 'webhooks:read',
  catalog: 'webhooks:read',
  unknown: null,
};

function landingRoute(session: PortalSessionView): string {
  return session.permissions.includes('keys:read') ? hrefOf({ page: 'keys' }) : hrefOf({ page: 'webhooks' });
}

export function PortalApp({ config }: { config: PortalPageConfig }) {
  const [phase, setPhase] = useState<Phase>({ state: 'starting' });
  const api = useMemo(
    () =>
      new ApiClient({ basePath: config.basePath, onSessionEnded: (reason) => setPhase({ state: reason }) }),
    [config.basePath],
  );
  const replaced = useCallback(() => setPhase({ state: 'replaced' }), []);
  const ready = (session: PortalSessionView) => {
    if (parseRoute(location.hash).page === 'unknown') {
      history.replaceState(null, '', `${location.pathname}${location.search}${landingRoute(session)}`);
    }
    // The browser's session is this one now: other tabs of this portal follow it or say so.
    if (!api.inMemory) announceSession(config.basePath, session.id);
    setPhase({ state: 'ready', session });
  };
  useEffect(() => {
    const start = () =>
      startSession(api).then(
        (started) => (started.state === 'ready' ? ready(started.session) : setPhase(started)),
        () => setPhase({ state: 'failed', message: 'Something went wrong while the portal started.' }),
      );
    // A new link opened in this tab changes only the fragment: no page load, so exchange it here.
    const onHashChange = () => {
      if (!hasLinkToken()) return;
      setPhase({ state: 'starting' });
      void start();
    };
    void start();
    window.addEventListener('hashchange', onHashChange);
    return () => window.removeEventListener('hashchange', onHashChange);
  }, [api]);

  const brandName = config.brand.name;
  switch (phase.state) {
    case 'starting':
      return (
        <main id="main" class="ended" aria-busy="true">
          <p>Opening the portal…</p>
        </main>
      );
    case 'refused':
      return <RefusedLinkPage message={phase.message} brandName={brandName} />;
    case 'ended':
      return <SessionEndedPage brandName={brandName} />;
    case 'signed-out':
      return <SessionEndedPage brandName={brandName} signedOut />;
    case 'failed':
      return <StartFailedPage message={phase.message} />;
    case 'replaced':
      return <SessionReplacedPage />;
    case 'choose':
      return (
        <ChooseAccountPage
          api={api}
          current={phase.current}
          next={phase.next}
          brandName={brandName}
          onChosen={ready}
          onFailed={(message) => setPhase({ state: 'failed', message })}
        />
      );
    case 'ready':
      return (
        <PortalContext.Provider
          value={{ api, session: phase.session, brandName: brandName ?? 'Developer portal' }}
        >
          <Shell
            config={config}
            onSignedOut={() => setPhase({ state: 'signed-out' })}
            onReplaced={replaced}
          />
        </PortalContext.Provider>
      );
  }
}

const PAGE_TITLES: Record<Route['page'], string> = {
  keys: 'API keys',
  webhooks: 'Webhook endpoints',
  webhook: 'Endpoint',
  delivery: 'Delivery',
  catalog: 'Event catalog',
  unknown: 'Page not found',
};

function Shell({
  config,
  onSignedOut,
  onReplaced,
}: {
  config: PortalPageConfig;
  onSignedOut: () => void;
  onReplaced: () => void;
}) {
  const { api, session, brandName, can } = usePortal();
  const route = useHashRoute();
  const main = useRef<HTMLElement>(null);
  const first = useRef(true);
  const [signOutError, setSignOutError] = useState<ApiError | null>(null);

  // Another tab made another session the browser's: this page's session is no longer its cookie's.
  // A page coming back into view asks too, for a browser without BroadcastChannel.
  useEffect(() => {
    if (api.inMemory) return undefined;
    const stop = onSessionAnnounced(config.basePath, (id) => {
      if (id !== session.id) onReplaced();
    });
    const onVisible = () => {
      if (document.visibilityState === 'visible') api.get('/session').catch(() => undefined);
    };
    document.addEventListener('visibilitychange', onVisible);
    return () => {
      stop();
      document.removeEventListener('visibilitychange', onVisible);
    };
  }, [api, session.id, config.basePath, onReplaced]);

  useEffect(() => {
    document.title = `${PAGE_TITLES[route.page]} · ${brandName}`;
    // After a navigation (not the first page), focus the new page, as a page load would.
    if (first.current) first.current = false;
    else main.current?.focus();
  }, [route, brandName]);

  const signOut = async () => {
    try {
      await api.post('/sign-out');
      api.forgetSession();
      onSignedOut();
    } catch (error) {
      setSignOutError(asApiError(error));
    }
  };
  const links: { route: Exclude<Route, { page: 'unknown' }>; label: string; permission: PortalPermission }[] =
    [
      { route: { page: 'keys' }, label: 'API keys', permission: 'keys:read' },
      { route: { page: 'webhooks' }, label: 'Webhooks', permission: 'webhooks:read' },
      { route: { page: 'catalog' }, label: 'Event catalog', permission: 'webhooks:read' },
    ];
  const current = route.page === 'webhook' || route.page === 'delivery' ? 'webhooks' : route.page;
  const permission = PAGE_PERMISSION[route.page];

  return (
    <>
      <button type="button" class="skip-link" onClick={() => main.current?.focus()}>
        Skip to content
      </button>
      <header class="top">
        <div class="brand">
          {config.brand.logoUrl ? <img src={config.brand.logoUrl} alt="" class="logo" /> : null}
          <span class="brand-name">{brandName}</span>
          <span class="account">
            Account <span class="mono">{session.tenantId}</span>
          </span>
        </div>
        <nav aria-label="Portal">
          <ul>
            {links
              .filter((link) => can(link.permission))
              .map((link) => (
                <li key={link.label}>
                  <a
                    href={hrefOf(link.route)}
                    aria-current={current === link.route.page ? 'page' : undefined}
                  >
                    {link.label}
                  </a>
                </li>
              ))}
          </ul>
        </nav>
        <button type="button" onClick={() => void signOut()}>
          Sign out
        </button>
      </header>
      <ErrorNotice error={signOutError} />
      <main id="main" ref={main} tabIndex={-1}>
        {permission !== null && !can(permission) ? (
          <NotAllowed />
        ) : route.page === 'keys' ? (
          <KeysPage />
        ) : route.page === 'webhooks' ? (
          <WebhooksPage />
        ) : route.page === 'webhook' ? (
          <EndpointPage key={route.webhookId} webhookId={route.webhookId} />
        ) : route.page === 'delivery' ? (
          <DeliveryPage key={route.deliveryId} webhookId={route.webhookId} deliveryId={route.deliveryId} />
        ) : route.page === 'catalog' ? (
          <CatalogPage />
        ) : (
          <NotFound landing={landingRoute(session)} />
        )}
      </main>
      <footer class="bottom muted">This session ends {formatDate(session.expiresAt)}.</footer>
    </>
  );
}

function NotAllowed() {
  return (
    <section>
      <h1>Not available</h1>
      <p>This link does not allow this page.</p>
    </section>
  );
}

function NotFound({ landing }: { landing: string }) {
  return (
    <section>
      <h1>Page not found</h1>
      <p>
        <a href={landing}>Go to the portal's first page</a>
      </p>
    </section>
  );
}

import type { EventCatalogEntry } from './api-types.js';
import { CodeBlock } from './code-block.js';
import { usePortal } from './portal-context.js';
import { schemaFields } from './schema-fields.js';
import { verifySnippet } from './verify-snippet.js';

export function CatalogPage() {
  const { session } = usePortal();
  return (
    <section aria-labelledby="catalog-heading">
      <h1 id="catalog-heading">Event catalog</h1>
      <p>The events your endpoints can receive. Each delivery is signed; verify it before you trust it.</p>
      <h2>Verify it in your receiver</h2>
      <p>
        With <span class="mono">npm install @keyhook/webhook-verify</span>, in an Express app (it throws on a
        forged, altered or replayed delivery):
      </p>
      <CodeBlock label="Verification example" text={verifySnippet(session.headers)} />
      {session.events.length === 0 ? <p>No event types are declared.</p> : null}
      {session.events.map((type) => (
        <EventType key={type.type} type={type} />
      ))}
    </section>
  );
}

function EventType({ type }: { type: EventCatalogEntry }) {
  const fields = schemaFields(type.schema);
  return (
    <article class="event-type" aria-labelledby={`event-${type.type}`}>
      <h2 id={`event-${type.type}`}>
        <code>{type.type}</code>
      </h2>
      {type.description ? <p>{type.description}</p> : null}
      <h3>Fields of data</h3>
      {fields.length > 0 ? (
        <div class="table-wrap">
          <table>
            <caption class="visually-hidden">The fields of {type.type}'s data</caption>
            <thead>
              <tr>
                <th scope="col">Field</th>
                <th scope="col">Type</th>
                <th scope="col">Description</th>
              </tr>
            </thead>
            <tbody>
              {fields.map((field) => (
                <tr key={field.name}>
                  <th scope="row" class="mono break">
                    {field.name}
                  </th>
                  <td>
                    {field.type}
                    {field.required ? null : <span class="muted">, optional</span>}
                  </td>
                  <td>{field.description ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <p class="muted">{type.schema ? 'No fields are declared.' : 'No schema: data is any JSON object.'}</p>
      )}
      {type.schema ? (
        <details>
          <summary>JSON Schema</summary>
          <CodeBlock label={`JSON Schema of ${type.type}`} text={JSON.stringify(type.schema, null, 2)} />
        </details>
      ) : null}
      <h3>Example</h3>
      {type.example ? (
        <CodeBlock label={`Example of ${type.type}`} text={JSON.stringify(type.example, null, 2)} />
      ) : (
        <p class="muted">No example.</p>
      )}
    </article>
  );
}

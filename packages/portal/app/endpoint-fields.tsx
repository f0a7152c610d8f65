import type { ApiError } from './api-client.js';
import { Choice, ChoiceGroup, Field, toggled } from './form-fields.js';
import { usePortal } from './portal-context.js';

/** An endpoint's URL, its description and the events it receives, for the create and edit dialogs. */
export function EndpointTargetFields({
  url,
  onUrl,
  events,
  onEvents,
  description,
  onDescription,
  error,
}: {
  url: string;
  onUrl: (url: string) => void;
  events: string[];
  onEvents: (update: (events: string[]) => string[]) => void;
  description: string;
  onDescription: (description: string) => void;
  error: ApiError | null;
}) {
  const { session } = usePortal();
  return (
    <>
      <Field
        label="Endpoint URL"
        hint={
          session.developmentUrls
            ? 'A URL of yours that receives the events. In development, http:// and loopback URLs (127.0.0.1, localhost) are allowed too; production takes https:// URLs on public addresses only.'
            : 'An https:// URL of yours that receives the events.'
        }
        error={error?.fieldMessage('url')}
      >
        {(props) => (
          <input
            {...props}
            type="url"
            required
            placeholder="https://example.com/webhooks"
            value={url}
            onInput={(e) => onUrl(e.currentTarget.value)}
          />
        )}
      </Field>
      <Field
        label="Description (optional)"
        hint="Your own words for this endpoint, such as what receives its events."
        error={error?.fieldMessage('description')}
      >
        {(props) => (
          <input
            {...props}
            type="text"
            maxLength={500}
            value={description}
            onInput={(e) => onDescription(e.currentTarget.value)}
          />
        )}
      </Field>
      <ChoiceGroup
        legend="Events to send"
        error={error?.fieldMessage('events')}
        noneChosen="Choose at least one event"
      >
        {session.events.map((type) => (
          <Choice
            key={type.type}
            name="events"
            value={type.type}
            description={type.description}
            checked={events.includes(type.type)}
            onToggle={(value, on) => onEvents((list) => toggled(list, value, on))}
          />
        ))}
      </ChoiceGroup>
    </>
  );
}

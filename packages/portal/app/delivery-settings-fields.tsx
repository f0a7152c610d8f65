import type { ApiError } from './api-client.js';
import { type DeliverySettingsDraft, SIGNATURE_SCHEMES } from './delivery-settings.js';
import { ChoiceGroup, ChoiceRow, Field, RadioChoice } from './form-fields.js';

/**
 * An endpoint's signature scheme and delivery rate, for the create and edit dialogs. `isNew`
 * offers the host's defaults: no scheme picked and no limit checked send nothing.
 */
export function DeliverySettingsFields({
  draft,
  onChange,
  error,
  isNew,
}: {
  draft: DeliverySettingsDraft;
  onChange: (draft: DeliverySettingsDraft) => void;
  error: ApiError | null;
  isNew: boolean;
}) {
  const set = (change: Partial<DeliverySettingsDraft>) => onChange({ ...draft, ...change });
  return (
    <>
      <ChoiceGroup legend="Signature scheme" error={error?.fieldMessage('signatureScheme')}>
        {isNew ? (
          <RadioChoice
            name="signatureScheme"
            label="The default"
            description="The scheme your provider signs new endpoints with."
            checked={draft.scheme === ''}
            onSelect={() => set({ scheme: '' })}
          />
        ) : null}
        {SIGNATURE_SCHEMES.map((option) => (
          <RadioChoice
            key={option.scheme}
            name="signatureScheme"
            label={option.label}
            description={option.hint}
            checked={draft.scheme === option.scheme}
            onSelect={() => set({ scheme: option.scheme })}
          />
        ))}
      </ChoiceGroup>
      <fieldset>
        <legend>Delivery rate</legend>
        <ChoiceRow
          label="Limit deliveries"
          description={
            isNew
              ? 'Unchecked, the default applies: usually no limit.'
              : 'Unchecked, deliveries go out as fast as events come.'
          }
          input={(props) => (
            <input
              {...props}
              type="checkbox"
              checked={draft.limited}
              onChange={(event) => set({ limited: event.currentTarget.checked })}
            />
          )}
        />
        {draft.limited ? (
          <Field
            label="Deliveries per second"
            hint="0.01 to 1000; 0.5 sends one every 2 seconds. Deliveries over it wait their turn."
            error={error ? deliveryRateError(error) : undefined}
          >
            {(props) => (
              <input
                {...props}
                type="number"
                min={0.01}
                max={1000}
                step="any"
                value={draft.perSecond}
                onInput={(event) => set({ perSecond: event.currentTarget.value })}
              />
            )}
          </Field>
        ) : null}
      </fieldset>
    </>
  );
}

function deliveryRateError(error: ApiError): string | undefined {
  return error.details.find((detail) => detail.path?.startsWith('deliveryRate'))?.message;
}

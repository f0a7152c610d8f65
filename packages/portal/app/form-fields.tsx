import type { ComponentChildren } from 'preact';
import { useId } from 'preact/hooks';

/**
 * The API's field message as a sentence about the field: "must not be empty" beside "Name" reads
 * "Name must not be empty". A message that is a sentence already is shown as it is.
 */
export function fieldSentence(label: string, message: string): string {
  if (!/^[a-z]/.test(message)) return message;
  return `${label.replace(/\s*\(.*\)$/, '')} ${message}`;
}

/**
 * A labelled field with its hint and its error tied to it (aria-describedby), and aria-invalid
 * while the error stands. `children` gets the input's id and description ids.
 */
export function Field({
  label,
  hint,
  error,
  children,
}: {
  label: string;
  hint?: string | undefined;
  error?: string | undefined;
  children: (props: {
    id: string;
    'aria-describedby'?: string;
    'aria-invalid'?: boolean;
  }) => ComponentChildren;
}) {
  const id = useId();
  const hintId = `${id}-hint`;
  const errorId = `${id}-error`;
  const describedBy = [hint ? hintId : '', error ? errorId : ''].filter(Boolean).join(' ');
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {hint ? (
        <p id={hintId} class="hint">
          {hint}
        </p>
      ) : null}
      {children({
        id,
        ...(describedBy ? { 'aria-describedby': describedBy } : {}),
        ...(error ? { 'aria-invalid': true } : {}),
      })}
      {error ? (
        <p id={errorId} class="field-error">
          {fieldSentence(label, error)}
        </p>
      ) : null}
    </div>
  );
}

/**
 * One choice's layout: its input, its label and an optional description the input points to.
 * `input` gets the id and aria-describedby to put on the input.
 */
export function ChoiceRow({
  input,
  label,
  labelClass,
  description,
}: {
  input: (props: { id: string; 'aria-describedby': string | undefined }) => ComponentChildren;
  label: ComponentChildren;
  labelClass?: string | undefined;
  description?: ComponentChildren;
}) {
  const id = useId();
  const describedBy = description ? `${id}-description` : undefined;
  return (
    <div class="choice">
      {input({ id, 'aria-describedby': describedBy })}
      <label for={id} class={labelClass}>
        {label}
      </label>
      {description ? (
        <p id={describedBy} class="hint">
          {description}
        </p>
      ) : null}
    </div>
  );
}

/** A checkbox with its label and an optional description, for lists of choices (scopes, events). */
export function Choice({
  name,
  value,
  checked,
  description,
  onToggle,
}: {
  name: string;
  value: string;
  checked: boolean;
  description?: string | undefined;
  onToggle: (value: string, checked: boolean) => void;
}) {
  return (
    <ChoiceRow
      label={value}
      labelClass="mono"
      description={description}
      input={(props) => (
        <input
          {...props}
          type="checkbox"
          name={name}
          value={value}
          checked={checked}
          onChange={(event) => onToggle(value, event.currentTarget.checked)}
        />
      )}
    />
  );
}

/** A radio button with its label and an optional description, for one of several choices. */
export function RadioChoice({
  name,
  label,
  checked,
  description,
  onSelect,
}: {
  name: string;
  label: string;
  checked: boolean;
  description?: string | undefined;
  onSelect: () => void;
}) {
  return (
    <ChoiceRow
      label={label}
      description={description}
      input={(props) => <input {...props} type="radio" name={name} checked={checked} onChange={onSelect} />}
    />
  );
}

/**
 * A group of choices under a legend, with the group's error. `noneChosen` is what an empty choice
 * is told ("Choose at least one event"), in place of the API's "must name at least one".
 */
export function ChoiceGroup({
  legend,
  error,
  noneChosen,
  children,
}: {
  legend: string;
  error?: string | undefined;
  noneChosen?: string | undefined;
  children: ComponentChildren;
}) {
  const id = useId();
  const said = error && noneChosen && /^must name at least one\b/.test(error) ? noneChosen : error;
  return (
    <fieldset aria-describedby={said ? id : undefined}>
      <legend>{legend}</legend>
      {children}
      {said ? (
        <p id={id} class="field-error">
          {fieldSentence(legend, said)}
        </p>
      ) : null}
    </fieldset>
  );
}

/** Adds or removes `value` in a list of choices. */
export function toggled(list: string[], value: string, on: boolean): string[] {
  return on ? [...new Set([...list, value])] : list.filter((item) => item !== value);
}

import type { ComponentChildren } from 'preact';
import { useId } from 'preact/hooks';

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
          {error}
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

/** A group of choices under a legend, with the group's error. */
export function ChoiceGroup({
  legend,
  error,
  children,
}: {
  legend: string;
  error?: string | undefined;
  children: ComponentChildren;
}) {
  const id = useId();
  return (
    <fieldset aria-describedby={error ? id : undefined}>
      <legend>{legend}</legend>
      {children}
      {error ? (
        <p id={id} class="field-error">
          {error}
        </p>
      ) : null}
    </fieldset>
  );
}

/** Adds or removes `value` in a list of choices. */
export function toggled(list: string[], value: string, on: boolean): string[] {
  return on ? [...new Set([...list, value])] : list.filter((item) => item !== value);
}

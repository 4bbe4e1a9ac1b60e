import { MAX_ERROR_MESSAGE_LENGTH, MAX_ERROR_NAME_LENGTH } from '../protocol/decision-commands.js';

/**
 * What was thrown, as an Error: task, step, handler and workflow code may throw anything. An
 * object with a string `message` (what many libraries reject with) keeps its message and `name`;
 * anything else is written with `String()`, or, for a value that cannot be (an object without a
 * prototype, a `toString` or `message` that throws), described by its JSON or its type. Never
 * throws: it runs where a throw is an unhandled rejection, which ends the worker process.
 * @internal
 */
export function toError(thrown: unknown): Error {
  if (thrown instanceof Error) return thrown;
  try {
    if (typeof thrown === 'object' && thrown !== null && typeof (thrown as { message?: unknown }).message === 'string') {
      const error = new Error((thrown as { message: string }).message);
      const name = (thrown as { name?: unknown }).name;
      if (typeof name === 'string' && name !== '') error.name = name;
      return error;
    }
    return new Error(String(thrown));
  } catch {
    return new Error(describeUnprintable(thrown));
  }
}

function describeUnprintable(thrown: unknown): string {
  try {
    const json = JSON.stringify(thrown);
    if (typeof json === 'string') return `a value that has no text (${json.slice(0, 200)}) was thrown`;
  } catch {
    // As unprintable as JSON: its type is all there is to say.
  }
  return `a value that has no text (${Object.prototype.toString.call(thrown)}) was thrown`;
}

/**
 * `text` cut to at most `most` characters, saying so and how long it was, and never between the
 * two halves of a surrogate pair (a lone half is a string the service refuses).
 * @internal
 */
export function cutText(text: string, most: number): string {
  if (text.length <= most) return text;
  const full = `… (cut; ${text.length} characters in all)`;
  // A limit shorter than the note keeps what fits of the text and the shortest note (or none).
  const note = full.length < most ? full : most > 1 ? '…' : '';
  return text.slice(0, graphemeEnd(text, most - note.length)) + note;
}

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/**
 * The end, at most `end`, of the last whole grapheme of `text` before `end`: never inside a
 * surrogate pair (a lone half is a string the service refuses) nor between a letter and its
 * accents, the parts of an emoji joined by ZWJ or the two halves of a flag (each read as something
 * else). Only a window before `end` is segmented: a message may be megabytes long.
 */
function graphemeEnd(text: string, end: number): number {
  if (end <= 0) return 0;
  const from = Math.max(0, end - 256);
  let boundary = from;
  for (const { index } of graphemes.segment(text.slice(from, end + 64))) {
    if (from + index > end) break;
    boundary = from + index;
  }
  // A cluster longer than the window: cut where the window starts, or at least between code points.
  if (boundary === from && from > 0) return from;
  if (boundary === 0 && end > 0) {
    const last = text.charCodeAt(end - 1);
    return last >= 0xd800 && last <= 0xdbff ? end - 1 : end;
  }
  return boundary;
}

/**
 * A thrown error's message and name as the service records them: an error whose message carries a
 * whole response body was never recorded (its report refused as a whole, again and again), so
 * they are cut to the service's lengths.
 * @internal
 */
export function errorText(error: Error): { message: string; name: string } {
  return { message: cutText(text(() => error.message), MAX_ERROR_MESSAGE_LENGTH), name: cutText(text(() => error.name, 'Error'), MAX_ERROR_NAME_LENGTH) };
}

/** A field of an error as text, never throwing (as `toError`): a getter that throws, or a value `String()` cannot write. */
function text(read: () => unknown, otherwise?: string): string {
  let value: unknown;
  try {
    value = read();
  } catch {
    return otherwise ?? 'an error whose message cannot be read was thrown';
  }
  try {
    return String(value);
  } catch {
    return otherwise ?? describeUnprintable(value);
  }
}

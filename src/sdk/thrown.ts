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

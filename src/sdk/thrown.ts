/**
 * What was thrown, as an Error: task, step, handler and workflow code may throw anything. An
 * object with a string `message` (what many libraries reject with) keeps its message and `name`;
 * anything else is written with `String()`.
 * @internal
 */
export function toError(thrown: unknown): Error {
  if (thrown instanceof Error) return thrown;
  if (typeof thrown === 'object' && thrown !== null && typeof (thrown as { message?: unknown }).message === 'string') {
    const error = new Error((thrown as { message: string }).message);
    const name = (thrown as { name?: unknown }).name;
    if (typeof name === 'string' && name !== '') error.name = name;
    return error;
  }
  return new Error(String(thrown));
}

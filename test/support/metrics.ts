/**
 * The sum of a Prometheus metric's samples in a `/metrics` text, over the samples whose labels
 * include `labels` (all of them when none are given); `missing` when there is no such sample.
 */
export function metric(text: string, name: string, labels: Record<string, string> = {}, missing = 0): number {
  let total = 0;
  let found = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const body = match[2] ?? '';
    if (!Object.entries(labels).every(([k, v]) => body.includes(`${k}="${v}"`))) continue;
    found = true;
    total += Number(match[3]);
  }
  return found ? total : missing;
}

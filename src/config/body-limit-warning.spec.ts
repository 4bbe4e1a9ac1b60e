import { describe, expect, it } from '@jest/globals';
import { configWarnings, loadConfig } from './config.js';

describe('configWarnings: MAX_PAYLOAD_BYTES against BODY_LIMIT_BYTES', () => {
  it('warns when a payload MAX_PAYLOAD_BYTES allows cannot reach the service in a request of BODY_LIMIT_BYTES', () => {
    // The migration guide says to raise the payload bounds for bigger payloads. Raised to 1 MiB with
    // the default 1 MiB body limit, an input of 1 MiB is allowed but every request carrying it (the
    // input is a JSON string inside the JSON body, escaped once more: up to twice its size) is
    // refused with HTTP 413 before it is read, and nothing at start said so.
    const warnings = configWarnings(loadConfig({ MAX_PAYLOAD_BYTES: '1048576' }));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('BODY_LIMIT_BYTES=1048576');
    expect(warnings[0]).toContain('MAX_PAYLOAD_BYTES=1048576');
  });

  it('is satisfied by a body limit of twice the payload plus the envelope, and by the defaults', () => {
    expect(configWarnings(loadConfig({ MAX_PAYLOAD_BYTES: '1048576', BODY_LIMIT_BYTES: String(2 * 1048576 + 16 * 1024) }))).toEqual([]);
    expect(configWarnings(loadConfig({}))).toEqual([]);
  });
});

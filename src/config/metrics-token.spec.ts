import { describe, expect, it } from '@jest/globals';
import { ConfigError, loadConfig } from './config.js';

describe('METRICS_TOKEN', () => {
  // /metrics reads the token as `Bearer <one run of non-space characters>`: a token with a space
  // inside (say `Bearer s3cret`, the header's value pasted as the token) could never be sent, and
  // every scrape was refused 401 while the service started as if all was well.
  it.each(['Bearer s3cret', 'two words'])('%j, which no Authorization header can carry, stops the service naming it', (token) => {
    expect(() => loadConfig({ METRICS_TOKEN: token })).toThrow(ConfigError);
    expect(() => loadConfig({ METRICS_TOKEN: token })).toThrow(/METRICS_TOKEN/);
  });

  it('takes one without spaces (surrounding blanks trimmed)', () => {
    expect(loadConfig({ METRICS_TOKEN: '  s3cret-token_1  ' }).metricsToken).toBe('s3cret-token_1');
  });
});

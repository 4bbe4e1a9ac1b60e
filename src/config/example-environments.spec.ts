/**
 * README: configuration is "validated at start-up: a bad value stops the service (exit code 2)
 * with a message naming the variable". BATON_EXAMPLE_ENVIRONMENTS was taken as it came: an
 * environment the API refuses (over 128 characters, a control character) started the service,
 * and the example worker for it polled and was refused for ever (a warning a minute); an empty
 * value started an example worker serving nothing.
 */
import { describe, expect, it } from '@jest/globals';
import { ConfigError, loadConfig } from './config.js';

const problems = (env: Record<string, string>): string[] => {
  try {
    loadConfig({ READ_MODEL_PATH: 'x.db', ...env });
    return [];
  } catch (error) {
    return (error as ConfigError).problems;
  }
};

describe('BATON_EXAMPLE_ENVIRONMENTS', () => {
  it('refuses an environment the API would refuse, naming the variable', () => {
    expect(problems({ BATON_EXAMPLE_ENVIRONMENTS: `dev,${'x'.repeat(129)}` })).toEqual([expect.stringContaining('BATON_EXAMPLE_ENVIRONMENTS')]);
    expect(problems({ BATON_EXAMPLE_ENVIRONMENTS: 'dev,st\u0007ge' })).toEqual([expect.stringContaining('BATON_EXAMPLE_ENVIRONMENTS')]);
  });

  it('refuses a list with no environment while the example worker runs', () => {
    expect(problems({ BATON_EXAMPLE_ENVIRONMENTS: ' , ' })).toEqual([expect.stringContaining('BATON_EXAMPLE_ENVIRONMENTS')]);
    expect(problems({ BATON_EXAMPLE_ENVIRONMENTS: ' , ', BATON_EXAMPLE_WORKER: 'false' })).toEqual([]);
  });

  it('takes what it took before', () => {
    expect(loadConfig({ READ_MODEL_PATH: 'x.db' }).exampleEnvironments).toEqual(['dev']);
    expect(loadConfig({ READ_MODEL_PATH: 'x.db', BATON_EXAMPLE_ENVIRONMENTS: 'dev, staging ,' }).exampleEnvironments).toEqual(['dev', 'staging']);
    expect(loadConfig({ READ_MODEL_PATH: 'x.db', BATON_EXAMPLE_ENVIRONMENTS: 'x'.repeat(128) }).exampleEnvironments).toEqual(['x'.repeat(128)]);
  });
});

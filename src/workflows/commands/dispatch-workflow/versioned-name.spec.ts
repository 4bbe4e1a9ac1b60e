import { describe, expect, it } from '@jest/globals';
import { BadUserInputError } from '../../../shared/errors.js';
import { idempotencyKeyOf } from '../../../graphql/idempotency-key.js';
import { versionedName } from './dispatch-workflow.js';

describe('versionedName (the original client sends Signup_v2 as name Signup, version v2)', () => {
  it('appends the version to the name', () => {
    expect(versionedName('Signup', 'v2')).toBe('Signup_v2');
    expect(versionedName('Signup', null)).toBe('Signup');
    expect(versionedName('Signup', undefined)).toBe('Signup');
  });

  it('appends a version to a name that already ends in the same one (the client sends Sync_v2_v2 as Sync_v2 + v2), and refuses a version that is not vN', () => {
    expect(versionedName('Sync_v2', 'v2')).toBe('Sync_v2_v2');
    expect(() => versionedName('Signup', '2')).toThrow(BadUserInputError);
    expect(() => versionedName('Signup', 'v2.1')).toThrow(/version/);
  });

  it('puts back together what the client split at the last _vN: Order_v2_v3 arrives as Order_v2 + v3', () => {
    // It used to be refused ("the name Order_v2 already pins v2"), so the client could not dispatch it.
    expect(versionedName('Order_v2', 'v3')).toBe('Order_v2_v3');
    expect(versionedName('Import_v1_v10', 'v2')).toBe('Import_v1_v10_v2');
  });
});

describe('idempotencyKeyOf (the input field or the Idempotency-Key header)', () => {
  it('takes either, or both when they agree', () => {
    expect(idempotencyKeyOf(null, null)).toBeNull();
    expect(idempotencyKeyOf('k', null)).toBe('k');
    expect(idempotencyKeyOf(undefined, ' k ')).toBe('k');
    expect(idempotencyKeyOf('k', 'k')).toBe('k');
  });

  it('refuses a disagreement or an empty header, on the field idempotencyKey', () => {
    for (const [input, header] of [['a', 'b'], [null, '  ']] as const) {
      let thrown: unknown;
      try {
        idempotencyKeyOf(input, header);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(BadUserInputError);
      expect((thrown as BadUserInputError).details.field).toBe('idempotencyKey');
    }
  });
});

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { ReadModelDb } from '../event-store/read-model-db.js';
import type { StoredEvent } from '../event-store/event-registry.js';
import { newTokenSecret } from '../tokens/token-secrets.js';
import { TokensReadModel } from '../tokens/tokens.projection.js';
import { revokeInReadModels } from './revoke-in-read-models.js';

const created = (tokenId: string, secretHash: string) =>
  ({ type: 'ApiTokenCreated', data: { tokenId, secretHash, apps: ['demo'], environments: null, label: null, role: 'admin', createdAt: new Date().toISOString() } }) as unknown as StoredEvent;

describe('baton tokens revoke on the embedded store', () => {
  it('marks the token revoked in the shared read models: an instance reading them refuses it at once, before its projection applies the event', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'baton-revoke-')), 'baton.db');
    const rm = new ReadModelDb(file);
    const tokens = new TokensReadModel(rm);
    tokens.migrate();
    const tokenId = '019a0000-0000-7000-8000-000000000001';
    const { token, secretHash } = newTokenSecret(tokenId);
    tokens.project(created(tokenId, secretHash));
    expect(tokens.check(token).principal?.tokenId).toBe(tokenId); // verified, and cached

    expect(revokeInReadModels(`sqlite:${file}`, tokenId, {})).toBe(true);
    expect(tokens.check(token)).toEqual({ principal: null, reason: 'revoked' });
    // Again: already revoked, nothing changes.
    expect(revokeInReadModels(`sqlite:${file}`, tokenId, {})).toBe(false);
  });

  it('leaves a file with no read models, and EventStoreDB, alone', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'baton-revoke-')), 'baton.db');
    expect(revokeInReadModels(`sqlite:${file}`, 'x', {})).toBe(false);
    new ReadModelDb(file).db.close();
    expect(revokeInReadModels(`sqlite:${file}`, 'x', {})).toBe(false);
    expect(revokeInReadModels('esdb://localhost:2113', 'x', {})).toBe(false);
  });
});

import { Logger } from '@nestjs/common';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import * as examples from '../examples/index.js';
import { type EventStore } from './event-store/event-store.port.js';
import { Worker } from './sdk/worker.js';
import { createToken, revokeToken } from './tokens/create-token.js';
import { TokensReadModel } from './tokens/tokens.projection.js';

/**
 * The worker `npm start` runs beside the service for the workflows in `examples/` (app `demo`,
 * every environment). It talks to the service over HTTP like any other worker, with a token
 * of its own (role `worker`, app `demo`) kept in `<data dir>/example-worker.token`, created
 * again when that file is missing or its token no longer checks out.
 */
export async function startExamplesWorker(opts: {
  url: string;
  store: EventStore;
  tokens: TokensReadModel;
  tokenFile: string;
  environments: string[];
}): Promise<() => Promise<void>> {
  let token = existsSync(opts.tokenFile) ? readFileSync(opts.tokenFile, 'utf8').trim() : '';
  const kept = token ? opts.tokens.authenticate(token) : null;
  if (!kept || kept.role !== 'worker') {
    // A worker needs the worker protocol only. Earlier versions gave this token the admin role:
    // such a token is replaced and revoked, so the file on disk no longer holds an admin secret.
    token = (await createToken(opts.store, { apps: ['demo'], label: 'example worker', role: 'worker' })).token;
    mkdirSync(dirname(opts.tokenFile), { recursive: true });
    writeFileSync(opts.tokenFile, `${token}\n`, { mode: 0o600 });
    // `mode` applies only to a file this call creates: one already there (an earlier token) keeps its own.
    chmodSync(opts.tokenFile, 0o600);
    if (kept) await revokeToken(opts.store, kept.tokenId);
  }
  const definitions = Object.values(examples);
  const logger = new Logger('ExamplesWorker');
  const workers = opts.environments.map(
    (environment) =>
      new Worker({
        url: opts.url,
        token,
        appId: 'demo',
        environment,
        tasks: definitions.filter((d) => d.kind === 'task'),
        workflows: definitions.filter((d) => d.kind === 'workflow'),
        logger: { info: (m) => logger.log(m), warn: (m) => logger.warn(m), error: (m) => logger.error(m) },
      }),
  );
  for (const worker of workers) void worker.run();
  logger.log(`running ${definitions.length} example definitions for app demo in ${opts.environments.join(', ')}`);
  return async () => {
    await Promise.all(workers.map((w) => w.shutdown()));
  };
}

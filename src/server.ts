import { Logger } from '@nestjs/common';
import { LifecycleService } from './health/lifecycle.service.js';
import { dirname, join } from 'node:path';
import { startExamplesWorker } from './examples-worker.js';
import { createApp, startReadModels } from './app.js';
import { ConfigError, configWarnings, loadConfig, storePathProblems } from './config/config.js';
import { EVENT_STORE, type EventStore } from './event-store/event-store.port.js';
import { createToken } from './tokens/create-token.js';
import { TokensReadModel } from './tokens/tokens.projection.js';

/** Starts the service (see main.ts, which may start tracing first); `stopTracing` flushes spans on shutdown. */
export async function main(stopTracing: () => Promise<void> = async () => {}): Promise<void> {
  let config;
  try {
    config = loadConfig();
    const problems = storePathProblems(config);
    if (!config.eventStoreUrl.startsWith('sqlite:')) {
      const { esdbConnectionStringProblem } = await import('./event-store/esdb/connection-string.js');
      const problem = esdbConnectionStringProblem(config.eventStoreUrl);
      if (problem) problems.push(`EVENT_STORE_URL=${JSON.stringify(config.eventStoreUrl)}: ${problem}`);
    }
    if (problems.length > 0) throw new ConfigError(problems);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const logger = new Logger('Baton');
  // Listening before the read models have caught up with the log: /health/live answers and
  // /health/ready says why not (a long log, or a store that does not answer yet), GraphQL 503.
  const app = await createApp(config, { readModels: 'later' });
  for (const warning of configWarnings(config)) logger.warn(warning);
  try {
    await app.listen(config.port, config.host);
  } catch (error) {
    // A port taken or not allowed, a host that does not resolve or is not this machine's: the
    // settings are wrong for this host, said as the other bad settings are (exit 2, naming them).
    const problem = listenProblem(error, config.port, config.host);
    if (problem === undefined) throw error;
    // Nothing was appended yet (no request served, read models not started): nothing to flush.
    process.stderr.write(`${problem}\n`);
    process.exit(2);
  }
  const url = (await app.getUrl()).replace('[::1]', 'localhost').replace('0.0.0.0', 'localhost');
  logger.log(`listening on ${url} (event store: ${app.get<EventStore>(EVENT_STORE).kind}); catching up with the log`);

  // SIGTERM: not ready at once, parked polls answered empty and no new claims; after
  // SHUTDOWN_DELAY_MS the listener closes and requests in flight finish; then the store flushes
  // the appends it holds and closes. Past SHUTDOWN_GRACE_MS the process exits anyway (code 1).
  let stopWorker = async () => {};
  const shutdown = async (signal: string) => {
    const started = Date.now();
    setTimeout(() => {
      logger.error(`shutdown did not finish within SHUTDOWN_GRACE_MS=${config.shutdownGraceMs}; exiting`);
      process.exit(1);
    }, config.shutdownGraceMs).unref();
    app.get(LifecycleService).startDraining(signal);
    if (config.shutdownDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, config.shutdownDelayMs));
    await stopWorker();
    app.get(LifecycleService).startClosing();
    await app.close();
    await stopTracing();
    logger.log(`stopped in ${Date.now() - started} ms`);
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));

  await startReadModels(app);

  // Only on a store that never had a token: after an operator revoked every token, none comes back.
  if (config.bootstrapToken && !app.get(TokensReadModel).everIssued) {
    const { token } = await createToken(app.get<EventStore>(EVENT_STORE), { apps: ['demo'], label: 'bootstrap' });
    process.stdout.write(
      [
        '',
        'No API token existed, so one was created for app "demo". It is shown only this once:',
        '',
        `  ${token}`,
        '',
        'Try it:',
        `  curl -s ${url}/graphql -H 'Content-Type: application/json' -H 'Authorization: Bearer ${token}' \\`,
        `    -d '{"query":"mutation($input: DispatchWorkflowInput!) { dispatchWorkflow(input: $input) { id } }","variables":{"input":{"appId":"demo","environment":"dev","name":"Onboarding","input":"[\\"ada@example.com\\"]","tag":"email:ada@example.com"}}}'`,
        '',
        `BATON_BOOTSTRAP_TOKEN=${token}`,
        '',
      ].join('\n'),
    );
  }
  if (config.exampleWorker) {
    const dataDir = config.eventStoreUrl.startsWith('sqlite:') ? dirname(config.eventStoreUrl.slice('sqlite:'.length)) : './data';
    stopWorker = await startExamplesWorker({
      url,
      store: app.get<EventStore>(EVENT_STORE),
      tokens: app.get(TokensReadModel),
      tokenFile: join(dataDir, 'example-worker.token'),
      environments: config.exampleEnvironments,
    });
  }
  process.stdout.write(`BATON_READY ${url}\n`);
}

/** What a failed `listen` says about `PORT` or `HOST`, or undefined for another failure. */
function listenProblem(error: unknown, port: number, host: string): string | undefined {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  switch (code) {
    case 'EADDRINUSE':
      return `PORT=${port}: another process listens on ${host}:${port}`;
    case 'EACCES':
      return `PORT=${port}: not allowed to listen on it (ports below 1024 need privileges)`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `HOST=${JSON.stringify(host)}: the name does not resolve (${code})`;
    case 'EADDRNOTAVAIL':
      return `HOST=${JSON.stringify(host)}: not an address of this machine`;
    default:
      return undefined;
  }
}

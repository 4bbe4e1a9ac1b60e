#!/usr/bin/env node
import { Command, CommanderError, Option } from 'commander';
import { readFileSync } from 'node:fs';
import { ConfigError, loadConfig } from '../config/config.js';
import { createEventStore } from '../event-store/create-event-store.js';
import { type EventStore, type RecordedEvent } from '../event-store/event-store.port.js';
import { eventsCommand, historyCommand, replayAllCommand, replayCommand } from './history-commands.js';
import { CliError, assertStoreExists, backupCommand } from './store-commands.js';
import { DEFAULT_ROLE, TOKEN_ROLES, type TokenRole } from '../tokens/token-roles.js';
import { PRINTABLE } from '../shared/printable.js';
import { parseToken } from '../tokens/token-secrets.js';
import { type WorkerCommandOptions, workerCommand } from './worker-command.js';

// The modules that load Nest (token deciders, read models) are imported by the commands that use
// them: --help, --version, worker, history, events and replay start in a fraction of the time.
const tokenCommands = () => import('../tokens/create-token.js');

const VERSION = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

interface StoreOptions {
  store?: string;
  create?: boolean;
}

/** Every command answers --help and --version. */
function command(parent: Command, nameAndArgs: string, description: string): Command {
  return parent.command(nameAndArgs).description(description).version(VERSION, '-V, --version', 'print the Baton version');
}

/** Commands that open the event store: --store overrides EVENT_STORE_URL, --create allows a new SQLite file. */
function withStoreOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option('--store <url>', 'event store URL (sqlite:<file>, esdb://…, kurrentdb://…)').env('EVENT_STORE_URL').default('sqlite:./data/baton.db'))
    .option('--create', 'create the SQLite store if the file does not exist', false);
}

/**
 * The store URL of --store (or EVENT_STORE_URL), checked alone: the service's other settings
 * (LOG_LEVEL, PORT, SHUTDOWN_DELAY_MS…) are none of the CLI's, and one the service would refuse
 * must not lock an operator out of the store.
 */
function storeUrl(options: StoreOptions): string {
  return loadConfig({ EVENT_STORE_URL: options.store }).eventStoreUrl;
}

async function withStore(options: StoreOptions, run: (store: EventStore) => Promise<number>): Promise<number> {
  const url = storeUrl(options);
  assertStoreExists(url, options.create === true);
  const store = await createEventStore(url);
  try {
    return await run(store);
  } finally {
    await store.close();
  }
}

/** Ids are UUIDs, stored in lower case; the API reads them in either case, and so does the CLI. */
const uuidInLowerCase = (id: string): string => (/^[0-9A-Fa-f]{8}(-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}$/.test(id) ? id.toLowerCase() : id);

let exitCode = 0;
const done = (code: number) => {
  exitCode = code;
};

const program = new Command('baton')
  .description('Baton: the operator CLI (tokens, workers, histories, replay checks, backups).')
  .version(VERSION, '-V, --version', 'print the Baton version')
  .showHelpAfterError('(add --help for usage)')
  .exitOverride();

const tokens = command(program, 'tokens', 'issue, list and revoke API tokens');
withStoreOptions(command(tokens, 'create', 'issue a token; it is printed once, on the last line'))
  .requiredOption('--app <appId...>', 'app(s) the token may act on')
  .option('--env <environment...>', 'environment(s) the token may act on (default: all)')
  .option('--label <text>', 'a note shown by tokens list')
  .addOption(new Option('--role <role>', 'what the token may do').choices([...TOKEN_ROLES]).default(DEFAULT_ROLE))
  .action(async (o: StoreOptions & { app: string[]; env?: string[]; label?: string; role: TokenRole }) => {
    // What the API takes as an appId or environment: a token scoped to anything else acts on nothing.
    for (const [option, values] of [['--app', o.app], ['--env', o.env ?? []]] as const) {
      for (const value of values) {
        if (value.length < 1 || value.length > 128 || !PRINTABLE.test(value)) {
          throw new CliError(`${option} ${JSON.stringify(value)}: an ${option === '--app' ? 'app id' : 'environment'} is 1 to 128 characters, no control characters`);
        }
      }
    }
    return done(
      await withStore(o, async (store) => {
        const { createToken } = await tokenCommands();
        const { tokenId, token } = await createToken(store, { apps: o.app, environments: o.env ?? null, label: o.label ?? null, role: o.role, actor: 'cli' });
        process.stdout.write(`Token ${tokenId} (${o.role}) for app ${o.app.join(', ')}${o.env ? ` (environments ${o.env.join(', ')})` : ''}. It is shown only once:\n${token}\n`);
        return 0;
      }),
    );
  });
withStoreOptions(command(tokens, 'list', 'list tokens (id, scope, state); never the secrets')).action(async (o: StoreOptions) =>
  done(
    await withStore(o, async (store) => {
      const rows = new Map<string, { apps: string[]; environments: string[] | null; label: string | null; role: string; createdAt: string; revoked: boolean }>();
      const fold = (e: RecordedEvent) => {
        const data = e.data as Record<string, never>;
        if (e.type === 'ApiTokenCreated') rows.set(data.tokenId, { apps: data.apps, environments: data.environments, label: data.label, role: data.role ?? DEFAULT_ROLE, createdAt: data.createdAt, revoked: false });
        if (e.type === 'ApiTokenRevoked' && rows.has(data.tokenId)) rows.get(data.tokenId)!.revoked = true;
      };
      // The token streams only, where the store can read them alone (the whole log took seconds a million events).
      if (store.readCategory) for (const e of await store.readCategory('apitoken-')) fold(e);
      else {
        for (let after: bigint | undefined; ; ) {
          const page = await store.readAll({ after, maxCount: 1000 });
          if (page.length === 0) break;
          for (const e of page) {
            after = e.position;
            fold(e);
          }
        }
      }
      for (const [id, t] of rows) {
        process.stdout.write(`${id}  ${t.revoked ? 'revoked' : 'active '}  role=${t.role}  apps=${t.apps.join(',')}  envs=${t.environments?.join(',') ?? '*'}  created=${t.createdAt}${t.label ? `  label=${t.label}` : ''}\n`);
      }
      return 0;
    }),
  ),
);
withStoreOptions(command(tokens, 'revoke <tokenId>', 'revoke a token on every instance')).action(async (given: string, o: StoreOptions) => {
  // The token itself is not echoed (stderr ends up in logs): its id is named instead.
  if (given.startsWith('baton_')) {
    const parsed = parseToken(given.trim());
    throw new CliError(`that is a token, not a token id (its secret is not printed here)${parsed ? `; its id is ${parsed.tokenId}: baton tokens revoke ${parsed.tokenId}` : ''}`);
  }
  const tokenId = uuidInLowerCase(given);
  return done(
    await withStore(o, async (store) => {
      const { revokeToken } = await tokenCommands();
      const changed = await revokeToken(store, tokenId, 'cli').catch((error: unknown) => {
        if ((error as { code?: string }).code === 'NOT_FOUND') throw new CliError(`no token ${tokenId} in this store (baton tokens list shows them)`);
        throw error;
      });
      // Every instance sharing the embedded store's read models refuses it from now on, not once each has read the log.
      const { revokeInReadModels } = await import('./revoke-in-read-models.js');
      revokeInReadModels(storeUrl(o), tokenId);
      process.stdout.write(changed ? `Token ${tokenId} revoked.\n` : `Token ${tokenId} was already revoked.\n`);
      return 0;
    }),
  );
});

command(program, 'worker <module>', 'run a worker for the tasks and workflows a module exports, until SIGINT/SIGTERM')
  .addOption(new Option('--url <url>', 'Baton URL').env('BATON_URL').default('http://localhost:3000'))
  .addOption(new Option('--token <token>', 'API token').env('BATON_TOKEN'))
  .addOption(new Option('--app <appId>', 'app to serve').env('BATON_APP_ID'))
  .addOption(new Option('--env <environment>', 'environment to serve').env('BATON_ENVIRONMENT'))
  .addOption(new Option('--concurrency <n>', 'task attempts run at once').env('BATON_CONCURRENCY').default('10'))
  .addOption(new Option('--decision-concurrency <n>', 'decisions run at once, in slots of their own (default: --concurrency)').env('BATON_DECISION_CONCURRENCY'))
  .addOption(new Option('--heartbeat-ms <ms>', 'task heartbeat interval').env('BATON_HEARTBEAT_MS').default('5000'))
  .addOption(new Option('--max-cached-workflows <n>', 'workflow runs kept between decisions (sticky execution)').env('BATON_MAX_CACHED_WORKFLOWS').default('1000'))
  .addOption(new Option('--shutdown-grace-ms <ms>', 'how long SIGTERM waits for running work before releasing it').env('BATON_SHUTDOWN_GRACE_MS').default('30000'))
  .action(async (modulePath: string, o: WorkerCommandOptions) => done(await workerCommand(modulePath, o)));

withStoreOptions(command(program, 'history <workflowId>', "print every event of a workflow's history"))
  .option('--json', 'one JSON object per event, with data and metadata', false)
  .action(async (workflowId: string, o: StoreOptions & { json: boolean }) => done(await withStore(o, (store) => historyCommand(store, uuidInLowerCase(workflowId), o.json))));

withStoreOptions(command(program, 'events', 'print the global log in commit order, one JSON event per line, for audits and exports'))
  .option('--after <position>', 'start after this position (the one a previous run reported)')
  .option('--stream <prefix...>', 'only streams whose id starts with one of these (workflow-, task-, schedule-, apitoken-, retention-, or a whole stream id)')
  .option('--type <type...>', 'only events of these types (docs/EVENTS.md lists them)')
  .option('--limit <n>', 'stop after printing this many events')
  .action(async (o: StoreOptions & { after?: string; stream?: string[]; type?: string[]; limit?: string }) => {
    if (o.after !== undefined && !/^\d{1,20}$/.test(o.after)) throw new CliError(`--after takes a position (a whole number), not ${JSON.stringify(o.after)}`);
    if (o.limit !== undefined && !/^[1-9]\d{0,9}$/.test(o.limit)) throw new CliError(`--limit takes a whole number of events, 1 or more, not ${JSON.stringify(o.limit)}`);
    const options = { after: o.after === undefined ? undefined : BigInt(o.after), streams: o.stream, types: o.type, limit: o.limit === undefined ? undefined : Number(o.limit) };
    done(await withStore(o, (store) => eventsCommand(store, options)));
  });

withStoreOptions(command(program, 'replay <module> [workflowId]', "check that a module's workflow code still replays recorded histories"))
  .option('--all', 'replay every recorded workflow the module defines (progress bar on a terminal)', false)
  .option('--name <workflowName>', 'with --all: only workflows dispatched as or running this workflow (a name without a version: all its versions)')
  .action(async (modulePath: string, workflowId: string | undefined, o: StoreOptions & { all: boolean; name?: string }) => {
    if (!workflowId && !o.all) throw new CliError('replay needs a workflow id, or --all');
    done(await withStore(o, (store) => (workflowId ? replayCommand(store, modulePath, uuidInLowerCase(workflowId)) : replayAllCommand(store, modulePath, o.name))));
  });

withStoreOptions(command(program, 'backup <file>', 'write a consistent copy of the embedded SQLite store (online: instances may keep running)'))
  .option('--force', 'overwrite <file> if it exists', false)
  .action(async (file: string, o: StoreOptions & { force: boolean }) => {
    const url = storeUrl(o);
    done(await backupCommand(url, file, o));
  });

withStoreOptions(command(program, 'rebuild', 'drop the read models of the embedded SQLite store and fold the whole log into them again (stop every instance first)'))
  .action(async (o: StoreOptions) => {
    const url = storeUrl(o);
    const { rebuildCommand } = await import('./rebuild-command.js');
    done(await rebuildCommand(url));
  });

// A reader that stops early (`baton events | head`) closes the pipe: stop quietly, as Unix tools do.
process.stdout.on('error', (error: NodeJS.ErrnoException) => process.exit(error.code === 'EPIPE' ? 0 : 1));

/** Exits once stdout and stderr have handed over what was written: on a pipe, writes are asynchronous and process.exit would drop them. */
async function exit(code: number): Promise<never> {
  const flushed = (stream: NodeJS.WriteStream) => new Promise<void>((resolve) => (stream.writableLength === 0 ? resolve() : stream.write('', () => resolve())));
  await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
  process.exit(code);
}

program.parseAsync(process.argv).then(
  () => exit(exitCode),
  (error: unknown) => {
    if (error instanceof CommanderError) return exit(error.exitCode === 0 ? 0 : 2);
    if (error instanceof CliError) {
      process.stderr.write(`error: ${error.message}\n`);
      return exit(error.exitCode);
    }
    process.stderr.write(`${error instanceof ConfigError ? error.message : `error: ${(error as Error).message}`}\n`);
    return exit(1);
  },
);

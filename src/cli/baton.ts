#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config/config.js';
import { createEventStore } from '../event-store/create-event-store.js';
import { type EventStore } from '../event-store/event-store.port.js';
import { createToken, revokeToken } from '../tokens/create-token.js';
import { DEFAULT_ROLE, TOKEN_ROLES, isTokenRole } from '../tokens/roles.js';
import { historyCommand, replayCommand } from './history-commands.js';
import { workerCommand } from './worker-command.js';

const USAGE = `Usage: npm run baton -- <command>

  tokens create --app <appId> [--app <appId>...] [--env <environment>...] [--label <text>]
                [--role admin|operator|read-only|worker]
                          issue a token (default role admin); it is printed once, on the last line
  tokens list             list tokens (id, scope, state); never the secrets
  tokens revoke <tokenId> revoke a token on every instance
  worker <module> --token <t> --app <appId> --env <environment> [--url <url>] [--concurrency <n>]
                          run a worker for the tasks and workflows a module exports
  history <workflowId> [--json]
                          print every event of a workflow's history
  replay <module> <workflowId>
                          check that a module's workflow code still replays a recorded history

The store is EVENT_STORE_URL (default sqlite:./data/baton.db).`;

async function main(argv: string[]): Promise<number> {
  const [group, action, ...rest] = argv;
  if (!group || group === 'help' || group === '--help') {
    process.stdout.write(`${USAGE}\n`);
    return group ? 0 : 2;
  }
  if (group === 'worker') return workerCommand([action, ...rest].filter((a) => a !== undefined));
  const config = loadConfig();
  if (group === 'tokens') return withStore(config.eventStoreUrl, (store) => tokens(store, action, rest));
  if (group === 'history') return withStore(config.eventStoreUrl, (store) => historyCommand(store, action, rest.includes('--json')));
  if (group === 'replay') return withStore(config.eventStoreUrl, (store) => replayCommand(store, action, rest[0]));
  process.stderr.write(`unknown command: ${group}\n\n${USAGE}\n`);
  return 2;
}

async function withStore(url: string, run: (store: EventStore) => Promise<number>): Promise<number> {
  const store = await createEventStore(url);
  try {
    return await run(store);
  } finally {
    await store.close();
  }
}

async function tokens(store: EventStore, action: string | undefined, args: string[]): Promise<number> {
  switch (action) {
    case 'create': {
      const { values } = parseArgs({
        args,
        options: { app: { type: 'string', multiple: true }, env: { type: 'string', multiple: true }, label: { type: 'string' }, role: { type: 'string' } },
      });
      const role = values.role ?? DEFAULT_ROLE;
      if (!isTokenRole(role)) {
        process.stderr.write(`tokens create: --role must be one of ${TOKEN_ROLES.join(', ')}\n`);
        return 2;
      }
      if (!values.app?.length) {
        process.stderr.write('tokens create needs --app <appId>\n');
        return 2;
      }
      const { tokenId, token } = await createToken(store, { apps: values.app, environments: values.env ?? null, label: values.label ?? null, role, actor: 'cli' });
      process.stdout.write(`Token ${tokenId} (${role}) for app ${values.app.join(', ')}${values.env ? ` (environments ${values.env.join(', ')})` : ''}. It is shown only once:\n${token}\n`);
      return 0;
    }
    case 'list': {
      const rows = new Map<string, { apps: string[]; environments: string[] | null; label: string | null; role: string; createdAt: string; revoked: boolean }>();
      let after: bigint | undefined;
      for (;;) {
        const page = await store.readAll({ after, maxCount: 1000 });
        if (page.length === 0) break;
        for (const e of page) {
          after = e.position;
          const data = e.data as Record<string, never>;
          if (e.type === 'ApiTokenCreated') rows.set(data.tokenId, { apps: data.apps, environments: data.environments, label: data.label, role: data.role ?? DEFAULT_ROLE, createdAt: data.createdAt, revoked: false });
          if (e.type === 'ApiTokenRevoked' && rows.has(data.tokenId)) rows.get(data.tokenId)!.revoked = true;
        }
      }
      for (const [id, t] of rows) {
        process.stdout.write(`${id}  ${t.revoked ? 'revoked' : 'active '}  role=${t.role}  apps=${t.apps.join(',')}  envs=${t.environments?.join(',') ?? '*'}  created=${t.createdAt}${t.label ? `  label=${t.label}` : ''}\n`);
      }
      return 0;
    }
    case 'revoke': {
      const tokenId = args[0];
      if (!tokenId) {
        process.stderr.write('tokens revoke needs a token id\n');
        return 2;
      }
      const changed = await revokeToken(store, tokenId, 'cli');
      process.stdout.write(changed ? `Token ${tokenId} revoked.\n` : `Token ${tokenId} was already revoked.\n`);
      return 0;
    }
    default:
      process.stderr.write(`unknown tokens command: ${action ?? ''}\n\n${USAGE}\n`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error) => {
    process.stderr.write(`${error instanceof ConfigError ? error.message : `error: ${(error as Error).message}`}\n`);
    process.exit(1);
  },
);

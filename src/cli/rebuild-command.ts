import 'reflect-metadata';
import { resolve } from 'node:path';
import { readModelPath } from '../config/config.js';
import { AuditReadModel } from '../audit/audit.read-model.js';
import { type DurableProjection, EventRegistry, READ_MODEL_TYPES } from '../event-store/event-registry.js';
import { ReadModelDb } from '../event-store/read-model-db.js';
import { READ_MODELS_CHECKPOINT, ReadModelFolder } from '../event-store/read-model-folder.js';
import { SqliteEventStore } from '../event-store/sqlite/sqlite-event-store.js';
import { WORKFLOWS_EXPIRED } from '../retention/retention.service.js';
import { SCHEDULE_EVENT_TYPES } from '../schedules/domain/schedule.decider.js';
import { SchedulesTable } from '../schedules/schedules.read-model.js';
import { ATTEMPT_EVENT_TYPES } from '../tasks/domain/task-attempts.js';
import { TASK_EVENT_TYPES } from '../tasks/domain/task.decider.js';
import { TasksReadModel } from '../tasks/tasks.read-model.js';
import { TOKEN_EVENT_TYPES } from '../tokens/domain/token.decider.js';
import { TokensReadModel } from '../tokens/tokens.projection.js';
import { WORKFLOW_EVENT_TYPES } from '../workflows/domain/workflow.decider.js';
import { WorkflowsReadModel } from '../workflows/workflows.read-model.js';
import { CliError, assertNotInUse, assertStoreExists, sqliteFile } from './store-commands.js';

/**
 * `baton rebuild`: drops the durable read models (`rm_*` tables and their checkpoint; the effects
 * reactor's checkpoint stays) and folds the whole log into them again, offline, the way a first
 * start does, then prints how many events it went through and how fast. Run it with every
 * instance on the store stopped: they share these tables.
 */
export async function rebuildCommand(url: string, env: Record<string, string | undefined> = process.env): Promise<number> {
  const file = sqliteFile(url);
  if (file === null) {
    throw new CliError('baton rebuild works on the embedded SQLite store; next to EventStoreDB, stop the instance, delete its read-model file (READ_MODEL_PATH) and start it again');
  }
  assertStoreExists(url, false);
  // Instances fold into these tables as the rebuild drops and refills them: refuse beside one.
  const rmFile = readModelPath(url, env);
  for (const path of new Set([file, rmFile])) assertNotInUse(path, 'baton rebuild drops the read models its instances are using');
  const store = new SqliteEventStore(file);
  const rm = new ReadModelDb(rmFile);
  try {
    const readModels: DurableProjection[] = [new WorkflowsReadModel(rm), new TasksReadModel(rm), new SchedulesTable(rm), new AuditReadModel(rm), new TokensReadModel(rm)];
    const registry = new EventRegistry();
    registry.register([...WORKFLOW_EVENT_TYPES, ...TASK_EVENT_TYPES, ...ATTEMPT_EVENT_TYPES, ...SCHEDULE_EVENT_TYPES, ...TOKEN_EVENT_TYPES, WORKFLOWS_EXPIRED]);
    const durable = new Map<string, DurableProjection[]>();
    for (const model of readModels) {
      for (const type of Reflect.getMetadata(READ_MODEL_TYPES, model.constructor) as string[]) durable.set(type, [...(durable.get(type) ?? []), model]);
    }
    rm.db
      .transaction(() => {
        const tables = rm.db.prepare<[], { name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rm\\_%' ESCAPE '\\' AND name != 'rm_checkpoints'`).all();
        for (const { name } of tables) rm.db.exec(`DROP TABLE "${name}"`);
        rm.db.prepare('DELETE FROM rm_checkpoints WHERE name = ?').run(READ_MODELS_CHECKPOINT);
      })
      .immediate();
    for (const model of readModels) model.migrate();
    const folder = new ReadModelFolder(rm, registry, durable);
    const unknown = new Set<string>();
    const started = process.hrtime.bigint();
    const events = await folder.catchUp(store, {
      rehydrate: (recorded) => registry.rehydrate(recorded),
      skipped: (type) => {
        if (!registry.isKnown(type)) unknown.add(type);
      },
    });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const head = rm.checkpoint(READ_MODELS_CHECKPOINT);
    rm.db.pragma('wal_checkpoint(TRUNCATE)');
    const rate = Math.round((events ?? 0) / Math.max(seconds, 1e-9));
    process.stdout.write(
      `read models of ${resolve(file)} rebuilt from ${events} events (up to position ${head < 0n ? 0 : head}) in ${Math.round(seconds * 1000)} ms: ${rate} events/s` +
        `${unknown.size > 0 ? `; skipped events of unknown types: ${[...unknown].join(', ')}` : ''}\n`,
    );
    return 0;
  } finally {
    rm.close();
    await store.close();
  }
}

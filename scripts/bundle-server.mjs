/**
 * Bundles the compiled service (dist/src/server.js and everything it imports, node_modules
 * included) into dist/src/bundle/server.mjs, which dist/src/main.js loads. Run by `npm run build`
 * after `tsc`: it bundles tsc's output, so the decorator metadata Nest reads is already there.
 *
 * Why: the service imports about 2,600 files. Node resolved, read and compiled each at every start,
 * about 1.2 s of CPU on this project's machines (two thirds of a start); one file takes a third of
 * that (docs/DECISIONS.md, "The service starts from one bundled module").
 *
 * Kept out of the bundle, loaded from node_modules as before:
 * - native modules (better-sqlite3), which cannot be bundled;
 * - the EventStoreDB client (gRPC): loaded only when EVENT_STORE_URL names EventStoreDB;
 * - pino and its transports, which start worker threads from their own files.
 * graphql is inside: nothing outside the bundle imports it, so there is one copy for the schema's
 * instanceof checks. With tracing on, main.js loads the files instead (the instrumentations patch
 * graphql's and Nest's modules as they are imported).
 */
import { rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rolldown } from 'rolldown';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outDir = join(root, 'dist/src/bundle');
const EXTERNAL = [/^better-sqlite3/, /\.node$/, /^@eventstore\//, /^pino(-|\/|$)/, /^thread-stream(\/|$)/];
/**
 * Optional peers Nest imports only when an application uses them (microservices, Express, Apollo
 * federation, …), each inside a try: not installed here, so left to fail at run time, as they did
 * unbundled. Any other import the bundler cannot resolve fails the build.
 */
const OPTIONAL_PEERS = [
  /^@apollo\/(gateway|subgraph)(\/|$)/,
  /^@as-integrations\/express5$/,
  /^@fastify\/(multipart|static|view)$/,
  /^@nestjs\/(microservices|platform-express|websockets)(\/|$)/,
  /^ts-morph$/,
];

const started = Date.now();
const unresolved = [];
await rm(outDir, { recursive: true, force: true });
const bundle = await rolldown({
  input: join(root, 'dist/src/server.js'),
  platform: 'node',
  external: (id) => EXTERNAL.some((pattern) => pattern.test(id)) || OPTIONAL_PEERS.some((pattern) => pattern.test(id)),
  onLog(level, log) {
    // Circular imports and eval inside dependencies are theirs and harmless here.
    if (['CIRCULAR_DEPENDENCY', 'EVAL'].includes(log.code ?? '')) return;
    if (log.code === 'UNRESOLVED_IMPORT') unresolved.push(log.message);
    else console.warn(`bundle-server: ${level}: ${log.message}`);
  },
});
if (unresolved.length) {
  console.error(`bundle-server: imports nothing resolves (install them, or list them in EXTERNAL or OPTIONAL_PEERS):\n${unresolved.join('\n')}`);
  process.exit(1);
}
// keepNames: Nest and the GraphQL schema read class names (a renamed `Foo$1` would be a new type).
await bundle.write({ dir: outDir, format: 'esm', entryFileNames: 'server.mjs', chunkFileNames: '[name]-[hash].mjs', keepNames: true, sourcemap: true });
await bundle.close();
console.log(`bundle-server: dist/src/bundle/server.mjs in ${Date.now() - started} ms`);

/**
 * Entry point. Tracing, when configured, must be set up before the modules it instruments are
 * loaded, so the service itself is imported only afterwards.
 *
 * The service is loaded from the one module `npm run build` bundles it into
 * (scripts/bundle-server.mjs: dist/src/bundle/server.mjs), which starts it with half the CPU its
 * 2,600 files take one by one. Where only `tsc` ran since (no bundle, or one older
 * than tsc's output), the files tsc wrote are loaded instead: the same code, never a stale copy.
 * With tracing on, the files are loaded too: the NestJS instrumentation patches @nestjs/core's own
 * modules as they are imported, and those are inside the bundle.
 */
import { statSync } from 'node:fs';

// A service runs in production mode unless told otherwise: graphql-js then skips its
// development-only checks on every type test (about 2% of a busy server's time), as in the
// Docker image, which sets it too.
process.env.NODE_ENV ??= 'production';
let stopTracing = async (): Promise<void> => {};
try {
  const tracing = Boolean(process.env.OTEL_EXPORTER_OTLP_ENDPOINT || process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  if (tracing) {
    const { startTracing } = await import('./observability/tracing.js');
    stopTracing = await startTracing();
  }
  const { main } = (await import((!tracing && bundledIfCurrent()) || './server.js')) as typeof import('./server.js');
  await main(stopTracing);
} catch (error) {
  process.stderr.write(`Baton failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}

function bundledIfCurrent(): string | undefined {
  const bundle = new URL('./bundle/server.mjs', import.meta.url);
  try {
    return statSync(bundle).mtimeMs >= statSync(new URL('./server.js', import.meta.url)).mtimeMs ? bundle.href : undefined;
  } catch {
    return undefined;
  }
}

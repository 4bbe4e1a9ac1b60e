/**
 * Entry point. Tracing, when configured, must be set up before the modules it instruments are
 * loaded, so the service itself is imported only afterwards.
 */
// A service runs in production mode unless told otherwise: graphql-js then skips its
// development-only checks on every type test (about 2% of a busy server's time), as in the
// Docker image, which sets it too.
process.env.NODE_ENV ??= 'production';
let stopTracing = async (): Promise<void> => {};
try {
  if (process.env.OTEL_EXPORTER_OTLP_ENDPOINT || process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) {
    const { startTracing } = await import('./observability/tracing.js');
    stopTracing = await startTracing();
  }
  const { main } = await import('./server.js');
  await main(stopTracing);
} catch (error) {
  process.stderr.write(`Baton failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}

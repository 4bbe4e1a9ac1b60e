/**
 * Entry point. Tracing, when configured, must be set up before the modules it instruments are
 * loaded, so the service itself is imported only afterwards.
 */
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

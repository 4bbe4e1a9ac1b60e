import { register } from 'node:module';

/**
 * OpenTelemetry tracing (@opentelemetry/sdk-node with the HTTP, GraphQL and NestJS
 * instrumentations). main.ts loads this module only when OTEL_EXPORTER_OTLP_ENDPOINT (or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set, so tracing costs nothing otherwise. The exporter
 * follows the standard OTEL_* variables (OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_SERVICE_NAME, …).
 */
export async function startTracing(): Promise<() => Promise<void>> {
  // ESM modules are instrumented through import-in-the-middle's loader hook.
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url);
  const { NodeSDK } = await import('@opentelemetry/sdk-node');
  const { HttpInstrumentation } = await import('@opentelemetry/instrumentation-http');
  const { GraphQLInstrumentation } = await import('@opentelemetry/instrumentation-graphql');
  const { NestInstrumentation } = await import('@opentelemetry/instrumentation-nestjs-core');
  // `baton` only when neither OTEL_SERVICE_NAME nor OTEL_RESOURCE_ATTRIBUTES names the service:
  // NodeSDK's serviceName overrides what its resource detectors read from them.
  const named = Boolean(process.env.OTEL_SERVICE_NAME?.trim()) || /(^|,)\s*service\.name\s*=/.test(process.env.OTEL_RESOURCE_ATTRIBUTES ?? '');
  const sdk = new NodeSDK({
    ...(named ? {} : { serviceName: 'baton' }),
    // Traces only (metrics are Prometheus' at /metrics): without these, NodeSDK also exports OTLP
    // metrics and logs by default. OTEL_METRICS_EXPORTER / OTEL_LOGS_EXPORTER set them up again.
    ...(process.env.OTEL_METRICS_EXPORTER ? {} : { metricReaders: [] }),
    ...(process.env.OTEL_LOGS_EXPORTER ? {} : { logRecordProcessors: [] }),
    instrumentations: [
      new HttpInstrumentation({ ignoreIncomingRequestHook: (req) => /^\/(health|metrics)/.test(req.url ?? '') }),
      new GraphQLInstrumentation({ mergeItems: true, ignoreTrivialResolveSpans: true }),
      new NestInstrumentation(),
    ],
  });
  sdk.start();
  const endpoint = process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  process.stdout.write(`${JSON.stringify({ level: 30, time: Date.now(), context: 'Tracing', msg: `OpenTelemetry tracing on, exporting to ${endpoint}` })}\n`);
  return () => sdk.shutdown().catch(() => undefined);
}

/** The parts of the original service's npm client (`zenaton` 0.8.0, untyped) the compatibility tests use. */
declare module 'zenaton' {
  interface Selection {
    withTag(tag: string): Selection;
    withId(id: string): Selection;
    send(event: string, ...data: unknown[]): Promise<unknown>;
    pause(): Promise<unknown>;
    resume(): Promise<unknown>;
    terminate(): Promise<unknown>;
  }
  interface Scheduling {
    withTag(tag: string): Scheduling;
    workflow(name: string, ...input: unknown[]): Promise<{ id: string } | undefined>;
    task(name: string, ...input: unknown[]): Promise<{ id: string } | undefined>;
  }
  interface Running {
    withTag(tag: string | number): Running;
    workflow(name: string, ...input: unknown[]): Promise<{ id: string } | null>;
    task(name: string, ...input: unknown[]): Promise<{ id: string } | null>;
  }
  export class Client {
    /** `name` tells several clients of one process apart (the client refuses a second unnamed one). */
    constructor(appId: string, apiToken: string, appEnv: string, name?: string);
    readonly run: Running;
    readonly select: { workflow(name?: string): Selection; withTag(tag: string): Selection; withId(id: string): Selection };
    readonly schedule: (cron: string) => Scheduling;
    /** A connector: `post(url, parameters)` (and get, put, patch, delete) dispatches the task `<service>:<method>`. */
    connector(service: string, serviceId?: string): Record<'post' | 'get' | 'put' | 'patch' | 'delete', (url: string, parameters?: unknown) => Promise<{ id: string } | null>>;
  }
  /** The client's error classes: ExternalZenatonError for what the service refused (GraphQL errors). */
  const zenaton: {
    Client: typeof Client;
    infos: { appVersion: string; codePath: string };
    Errors: { ZenatonError: new (message: string) => Error; ExternalZenatonError: new (message: string) => Error; InternalZenatonError: new (message: string) => Error };
  };
  export default zenaton;
}

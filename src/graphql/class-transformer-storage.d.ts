/**
 * class-transformer keeps its metadata (`@Type`, `@Transform`, `@Expose`, `@Exclude`) in a module it
 * does not export from its index; its CommonJS build is what `import 'class-transformer'` loads in Node
 * and in jest, so this is the same instance the decorators write to (fast-validation.ts checks it).
 */
declare module 'class-transformer/cjs/storage.js' {
  import type { MetadataStorage } from 'class-transformer/types/MetadataStorage.js';

  export const defaultMetadataStorage: MetadataStorage | undefined;
  const storageModule: { defaultMetadataStorage?: MetadataStorage } | undefined;
  export default storageModule;
}

/**
 * Three tiers, by suffix: `*.spec.ts` pure and fast, `*.int-spec.ts` through the real Nest app on
 * the embedded store (and real worker processes), `*.e2e-spec.ts` against external servers
 * (EventStoreDB), which skip themselves loudly when none is configured.
 */
const swc = [
  '@swc/jest',
  {
    jsc: {
      target: 'es2022',
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: false },
      keepClassNames: true,
    },
    module: { type: 'es6' },
    sourceMaps: 'inline',
  },
];

const common = {
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': swc },
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testEnvironment: 'node',
  rootDir: '.',
};

export default {
  testTimeout: 60_000,
  // One temporary folder per run (TMPDIR for the tests and what they spawn), removed at its end.
  globalSetup: '<rootDir>/test/support/temp-dir-setup.mjs',
  globalTeardown: '<rootDir>/test/support/temp-dir-teardown.mjs',
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.spec.ts'] },
    { ...common, displayName: 'int', testMatch: ['<rootDir>/src/**/*.int-spec.ts', '<rootDir>/test/**/*.int-spec.ts'] },
    { ...common, displayName: 'e2e', testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'] },
  ],
};

// Flat config: typescript-eslint (type-aware) + prettier. The rules that matter here:
// no imports between services, no framework, driver or format library in domain/ (nor a dynamic
// import), repositories and the outbox only in db/ and the composition roots, no floating promises,
// no console.
import js from '@eslint/js'
import tseslint from 'typescript-eslint'
import prettier from 'eslint-config-prettier'
import globals from 'globals'
import { readFileSync } from 'node:fs'

// The one list of services (packages/platform/services.json): no imports between any two of them.
const list = JSON.parse(readFileSync(new URL('./packages/platform/services.json', import.meta.url), 'utf8'))
const services = [list.gateway, ...list.services].map((s) => s.name)

// Domain code, routes, workers and consumers reach storage through a store interface, so each can be
// run on a fake and a query layer stays inside db/: only db/ and the composition roots (app.ts,
// server.ts, cli/), which build the repositories and hand them in, import one.
const repositories = {
  group: ['**/db/repositories', '**/db/repositories/**', '**/*-repository', '**/*-repository.*'],
  message:
    'Only db/ and the composition roots (app.ts, server.ts, cli/) import repositories: depend on a store interface.',
}

// The outbox is written inside a store's transaction (its `publish`), never beside it.
const outboxPaths = ['@clinic/platform', '@clinic/platform/events'].map((name) => ({
  name,
  importNames: ['enqueueEvents'],
  message: 'Only db/ writes the outbox: publish through a store transaction (tx.publish).',
}))

// Libraries a domain reaches only through a port it declares (an adapter outside domain/ implements
// it): a format (jose: signed links, through the platform's link kit; pdf-lib and fontkit: render/;
// file-type: adapters/), a driver or a framework.
const domainLibraries = ['jose', 'pdf-lib', '@pdf-lib/fontkit', 'file-type']
const domainPaths = [
  ...['fastify', 'knex', 'amqplib', 'pg', 'pino', 'prom-client'].map((name) => ({
    name,
    message: 'domain/ stays free of frameworks and drivers.',
  })),
  ...domainLibraries.map((name) => ({
    name,
    message: 'domain/ reaches this library through a port (an adapter outside domain/ implements it).',
  })),
  {
    name: '@clinic/platform',
    message: 'domain/ imports @clinic/platform/core (framework-free); the root loads fastify, knex, pg.',
  },
]
const domainPatterns = [
  {
    group: ['@clinic/platform/*', '!@clinic/platform/core'],
    message: 'domain/ imports @clinic/platform/core only.',
  },
  {
    group: [...domainLibraries, 'knex', 'fastify'].map((name) => `${name}/**`),
    message: 'domain/ reaches this library through a port (an adapter outside domain/ implements it).',
  },
]
// import() and require() would load what the import rule refuses, unseen: domain/ has neither.
const domainSyntax = [
  {
    selector: 'ImportExpression',
    message: 'domain/ loads no module at run time (import()): take what it needs through a port.',
  },
  {
    selector: "CallExpression[callee.name='require']",
    message: 'domain/ loads no module at run time (require): take what it needs through a port.',
  },
]

export default tseslint.config(
  {
    ignores: [
      '**/dist/**',
      '**/node_modules/**',
      'var/**',
      'coverage/**',
      'deploy/**/*.mjs',
      'deploy/**/*.js',
      'packages/client/src/schema.ts',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { project: ['./tsconfig.test.json'], tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'error',
    },
  },
  // One no-restricted-imports per file (a later config replaces an earlier one's lists, it does not
  // add to them): no other service anywhere in a service; no repository outside db/ and the
  // composition roots; and in domain/, no framework or driver either.
  ...services.flatMap((s) => {
    const cross = services
      .filter((o) => o !== s)
      .map((o) => ({
        group: [`**/services/${o}/**`, `@clinic/${o}`],
        message: 'Services talk over HTTP or events, never imports.',
      }))
    const restrict = (o) => ({ 'no-restricted-imports': ['error', o] })
    return [
      { files: [`services/${s}/**/*.ts`], rules: restrict({ patterns: cross }) },
      {
        files: [`services/${s}/src/**/*.ts`],
        ignores: [`services/${s}/src/{db,cli}/**`, `services/${s}/src/{app,server}.ts`],
        rules: restrict({ paths: outboxPaths, patterns: [...cross, repositories] }),
      },
      // The composition roots build the repositories, but write no outbox row themselves.
      {
        files: [`services/${s}/src/{app,server}.ts`],
        rules: restrict({ paths: outboxPaths, patterns: cross }),
      },
      {
        files: [`services/${s}/src/domain/**/*.ts`],
        rules: {
          ...restrict({
            paths: [...outboxPaths, ...domainPaths],
            patterns: [...cross, repositories, ...domainPatterns],
          }),
          'no-restricted-syntax': ['error', ...domainSyntax],
        },
      },
    ]
  }),
  {
    // Small parts: no source file over 300 lines, no function over 80 (tests aside). Migrations are
    // never edited once they land, so a long one stays as it was written.
    files: ['services/*/src/**/*.ts', 'packages/*/src/**/*.ts', 'scripts/**/*.{mjs,cjs}', 'e2e/src/**/*.ts'],
    ignores: ['**/db/migrations/**'],
    rules: {
      'max-lines': ['error', { max: 300 }],
      'max-lines-per-function': ['error', { max: 80 }],
    },
  },
  {
    files: ['**/*.{js,mjs,cjs}'],
    languageOptions: { globals: { ...globals.node } },
    rules: { 'no-console': 'off', '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: ['**/test/**/*.ts', 'e2e/**/*.ts', 'test-setup/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-non-null-assertion': 'off' },
  },
  {
    // Black-box tests read JSON answers of any shape, as a client does.
    files: ['e2e/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  prettier,
)

import { defineConfig } from 'vitest/config'
import { playwright } from '@vitest/browser-playwright'

// Debian's Chromium (apt `chromium`); scripts/test.mjs finds or installs it and sets CHROMIUM_PATH.
const chromiumArgs = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
]

export default defineConfig({
  test: {
    // Root level only: one anvil with every contract deployed, provided to both projects (toolchain P4).
    globalSetup: ['test/globalSetup.ts'],
    reporters: ['default', './test/support/summaryReporter.ts'],
    projects: [
      {
        test: {
          name: 'node',
          include: ['test/unit/**/*.test.ts', 'test/contracts/**/*.test.ts', 'test/cli/**/*.test.ts'],
          environment: 'node',
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        server: { headers: { 'Service-Worker-Allowed': '/' } },
        optimizeDeps: { include: ['comlink', 'hono', 'idb', 'viem', 'viem/accounts', 'viem/chains'] },
        test: {
          name: 'browser',
          include: ['test/browser/**/*.test.ts'],
          testTimeout: 60_000,
          browser: {
            enabled: true,
            headless: true,
            provider: playwright({
              launchOptions: { executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: chromiumArgs },
            }),
            instances: [{ browser: 'chromium' }],
          },
        },
      },
    ],
  },
})

import { defineConfig } from 'vitest/config'
import { playwright } from '@vitest/browser-playwright'
import { secp256k1Wasm } from './scripts/viteSecp256k1Wasm.ts'
import { tabCommands } from './test/browser/commands/tabs.ts'
import { peerCommands } from './test/browser/commands/peers.ts'
import { otherSiteCommands } from './test/browser/commands/otherSites.ts'
import { backupCommands } from './test/browser/commands/backup.ts'
import { monitoringCommands } from './test/browser/commands/monitoring.ts'
import { rpcEndpointCommands } from './test/browser/commands/rpcEndpoints.ts'
import { CHROMIUM_ARGS } from './test/support/engines/engine.ts'

// Debian's Chromium (apt `chromium`); scripts/test.mjs finds or installs it and sets CHROMIUM_PATH.

export default defineConfig({
  test: {
    // Root level only: one anvil with every contract deployed, provided to both projects (docs/decisions/0017-toolchain.md).
    globalSetup: ['test/globalSetup.ts'],
    reporters: ['default', './test/support/summaryReporter.ts', './test/support/stallReporter.ts'],
    projects: [
      {
        test: {
          name: 'node',
          include: [
            'test/unit/**/*.test.ts',
            'test/contracts/**/*.test.ts',
            'test/cli/**/*.test.ts',
            'test/headless/**/*.test.ts',
            'test/integration/**/*.test.ts',
            'test/api/**/*.test.ts',
            'test/package/**/*.test.ts',
            'test/demo/**/*.test.ts',
            'test/engines/**/*.test.ts',
            // Hosts in network namespaces over emulated links (test/support/netns/): needs root, as on CI.
            'test/network/**/*.test.ts',
          ],
          environment: 'node',
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        plugins: [secp256k1Wasm()],
        server: { headers: { 'Service-Worker-Allowed': '/' } },
        // tiny-secp256k1 stays out of pre-bundling so the plugin can swap its WASM loader.
        optimizeDeps: {
          include: [
            'comlink',
            'hono',
            'hono/bearer-auth',
            'hono/cors',
            'hono/http-exception',
            'hono/streaming',
            'hono/validator',
            'valibot',
            'idb',
            // sluice/react's test (test/browser/react.test.ts).
            'react',
            'react-dom/client',
            'viem',
            'viem/accounts',
            'viem/chains',
            'viem/utils',
            // The keystore's KDF (exportKeystore) and the page's event stream (worker/subscription.ts).
            '@noble/hashes/scrypt',
            'eventsource-parser',
            '@noble/curves/secp256k1',
            '@noble/hashes/sha3',
            'uint8array-tools',
            'hash-wasm',
            '@noble/ciphers/aes',
            '@noble/hashes/hkdf',
            '@noble/hashes/sha2',
            // What the node's worker loads with import() when relays are given (worker/node.worker.ts): the scan of
            // the test files does not see it, and a dependency found mid-run makes Vite reload and fail the import.
            '@libp2p/circuit-relay-v2',
            '@libp2p/gossipsub',
            '@libp2p/identify',
            // Imported for a value (an error class, KEEP_ALIVE), not only types: found mid-run otherwise (seen once).
            '@libp2p/interface',
            '@libp2p/noise',
            '@libp2p/peer-id',
            '@libp2p/utils',
            '@libp2p/websockets',
            // With the page's WebRTC bridge (worker/nodeLibp2p.ts).
            '@libp2p/webrtc',
            '@libp2p/yamux',
            '@libp2p/yamux/stream',
            '@libp2p/crypto/keys',
            '@multiformats/multiaddr',
            'libp2p',
            // And what GET /openapi.json loads with import() (src/api/routes/openapi.ts).
            '@valibot/to-json-schema',
          ],
          exclude: ['tiny-secp256k1'],
        },
        test: {
          name: 'browser',
          include: ['test/browser/**/*.test.ts'],
          testTimeout: 60_000,
          browser: {
            enabled: true,
            headless: true,
            provider: playwright({
              launchOptions: { executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: CHROMIUM_ARGS },
            }),
            instances: [{ browser: 'chromium' }],
            // Real tabs of the test origin (a second tab, a closed tab, a reload), a relay with headless peers, pages
            // of other origins, backup servers, a private chain with a monitoring service, and RPC endpoints that fail on
            // command: test/browser/commands/.
            commands: { ...tabCommands, ...peerCommands, ...otherSiteCommands, ...backupCommands, ...monitoringCommands, ...rpcEndpointCommands },
          },
        },
      },
    ],
  },
})

/**
 * The node's worker script (`node.worker.js`), kept to a line: it imports the node's module (`nodeWorkerMain.ts`)
 * with `import()`, holding the page's first messages until it listens. Chromium keeps no V8 code cache for a module
 * worker's own script and its static imports (measured: the node compiled anew at every start, 24 to 30 ms for the
 * entry alone), but does for a module the worker imports with `import()` (docs/decisions/0083).
 */
import { importHoldingMessages } from './importHoldingMessages.ts'

export type * from './nodeWorkerMain.ts'

importHoldingMessages(() => import('./nodeWorkerMain.ts'))

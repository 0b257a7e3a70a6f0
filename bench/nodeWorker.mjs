// Worker threads start without the parent's TypeScript loader: register tsx here, then run the worker.
import { register } from 'tsx/esm/api'
register()
await import('./nodeWorker.ts')

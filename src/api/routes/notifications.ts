import type { ApiContext } from '../context.ts'
import type { Resources } from '../resource.ts'

export function notificationsRoutes(resources: Resources, ctx: ApiContext): void {
  void resources
  void ctx
}

import type { ApiContext } from '../context.ts'
import type { Resources } from '../resource.ts'

export function tokensRoutes(resources: Resources, ctx: ApiContext): void {
  void resources
  void ctx
}

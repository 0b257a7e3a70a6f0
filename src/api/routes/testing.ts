import * as v from 'valibot'
import type { Address } from 'viem'
import { DisabledInProductionError } from '../../node/errors.ts'
import { mintTestTokens } from '../../node/actions/testTokens.ts'
import type { ApiContextRef } from '../context.ts'
import { address, integer } from '../fields.ts'
import { endpoint, json, type Resources } from '../resource.ts'
import { hex32String } from '../schema.ts'

// value 0, negative or above uint256 is a schema error (400), as Raiden's Range(1, UINT256_MAX) gives.
const body = {
  to: address(),
  value: integer({ min: 1n, rangeStatus: 400, description: 'amount to mint, 1 to 2^256-1' }),
}

/** The answer of a mint as a client receives it (openapi.json). */
export const mintAnswer = v.object({ transaction_hash: hex32String })
export type MintAnswer = v.InferOutput<typeof mintAnswer>

/** Test networks only: mint test tokens. */
export function testingRoutes(resources: Resources, ctx: ApiContextRef): void {
  resources.add('/_testing/tokens/:token_address/mint', {
    POST: endpoint({
      doc: {
        summary: 'Mint test tokens (test networks only)',
        description:
          'Calls the first of mint(address,uint256), mintFor(uint256,address) and increaseSupply(uint256,address) that the token accepts, paid by the node; answers once it is mined.',
        body,
        responses: {
          200: 'minted: transaction_hash',
          400: 'malformed JSON or fields (to not an EIP-55 address, value not in 1..2^256-1); minting failed (the token has no mint function the node may call, the address has no code, or the token refused the amount)',
          402: 'not enough native currency for gas',
          404: 'token_address is not an EIP-55 address',
          501: 'the node runs in the production environment',
        },
        schema: mintAnswer,
      },
      handler: async (c) => {
        const { to, value } = c.req.valid('json')
        if (ctx().environment === 'production') throw new DisabledInProductionError('Minting a token is currently disabled in production mode')
        const { transactionHash } = await mintTestTokens(ctx().client, { token: c.req.param('token_address') as Address, to, value })
        return json(c, { transaction_hash: transactionHash })
      },
    }),
  })
}

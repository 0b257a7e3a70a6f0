/**
 * A failure as a person reads it. The API's messages give amounts in base units ("Available=986000000000000000000");
 * for the messages known to carry amounts the page shows the same words with each amount in the token's units and
 * known addresses by name, and the API's own message under it, unchanged, with its status and code.
 */
import { ApiFailure } from './api.ts'
import { units, type Token } from './tokens.ts'

/**
 * The API's messages that carry amounts (src/node/channelActions.ts, payments.ts, userDeposit.ts), from their
 * start: `{amount}` is an amount of the request's token, `{address}` an address.
 */
const SHAPES = [
  'Not enough balance to deposit. Available={amount} Needed={amount}',
  'insufficient balance: our open channels can send at most {amount} in one payment, {amount} needed',
  'no route to {address} can carry {amount}',
  'amount must be positive, not {amount}',
  'Total deposit did not increase (it is {amount})',
  'Total deposit did not increase: the current total deposit is {amount}',
  'Total withdraw {amount} did not increase (it is {amount})',
  'The withdraw of {amount} is bigger than the current balance of {amount}',
  'The withdraw of {amount} expired before it reached the chain',
  'Deposit of {amount} would have exceeded the token network deposit limit',
  'Deposit of {amount} is larger than the channel participant deposit limit',
  'Deposit of {amount} would have exceeded the UDC balance limit of {amount} (the contract holds {amount})',
  'Withdrawing more than planned: the planned amount is {amount}',
].map((shape) => {
  const kinds: ('amount' | 'address')[] = []
  const source = shape
    .split(/(\{amount\}|\{address\})/)
    .map((part) => {
      if (part === '{amount}' || part === '{address}') {
        kinds.push(part === '{amount}' ? 'amount' : 'address')
        return part === '{amount}' ? '(\\d+)' : '(0x[0-9a-fA-F]{40})'
      }
      return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    })
    .join('')
  return { pattern: new RegExp(`^${source}`, 'd'), kinds }
})

const ADDRESS = /0x[0-9a-fA-F]{40}/g

export type Explained = {
  /** What the page shows first: the message, its amounts in token units where the page knows its shape. */
  text: string
  /** The API's own message, with status and code, when `text` differs from it. */
  api?: string
}

export type FailureContext = { tokens: Token[]; serviceToken: `0x${string}`; nameOf(address: string): string | undefined }

/** Which token a request's amounts are of: the one in its path or body; the service token for the user deposit. */
function tokenOf(request: ApiFailure['request'], context: FailureContext): Token | undefined {
  const inPath = /^\/(?:channels|payments|tokens|connections|_testing\/tokens)\/(0x[0-9a-fA-F]{40})/.exec(request.path)?.[1]
  const inBody = (request.body as { token_address?: unknown } | undefined)?.token_address
  const address = inPath ?? (typeof inBody === 'string' ? inBody : request.path.startsWith('/user_deposit') ? context.serviceToken : undefined)
  return address ? context.tokens.find((t) => t.address.toLowerCase() === address.toLowerCase()) : undefined
}

export function explain(error: unknown, context?: FailureContext): Explained {
  const message = error instanceof Error ? error.message : String(error)
  if (!(error instanceof ApiFailure) || !context) return { text: message }
  const token = tokenOf(error.request, context)
  let text = message
  const shape = token ? SHAPES.find((s) => s.pattern.test(message)) : undefined
  if (shape && token) {
    const match = shape.pattern.exec(message)!
    // Rebuilt from the matched pieces: the words between them stay as the API wrote them.
    let rebuilt = ''
    let at = 0
    shape.kinds.forEach((kind, i) => {
      const [start, end] = match.indices![i + 1]!
      const value = message.slice(start, end)
      rebuilt += message.slice(at, start) + (kind === 'amount' ? `${units(value, token.decimals)} ${token.symbol}` : value)
      at = end
    })
    text = rebuilt + message.slice(at)
  }
  // Known addresses by name, in any message.
  text = text.replace(ADDRESS, (address) => context.nameOf(address) ?? address)
  return text === message ? { text } : { text, api: `${error.status}${error.code ? ` ${error.code}` : ''}: ${message}` }
}

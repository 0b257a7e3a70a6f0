/**
 * The error codes of raiden-services' API (src/pathfinding_service/exceptions.py), which Raiden's clients read in the
 * `error_code` of an answer, with the HTTP status each is answered with. Ours answer with the same, so a Raiden node
 * or light client understands our service as it does theirs.
 */
export const pfsErrors = {
  InvalidRequest: { code: 2000, status: 400 },
  InvalidSignature: { code: 2001, status: 400 },
  RequestOutdated: { code: 2002, status: 400 },
  InvalidTokenNetwork: { code: 2003, status: 400 },
  UnsupportedTokenNetwork: { code: 2004, status: 400 },
  UnsupportedChainID: { code: 2005, status: 400 },
  InvalidAddress: { code: 2006, status: 400 },
  BadIOU: { code: 2100, status: 400 },
  MissingIOU: { code: 2101, status: 400 },
  WrongIOURecipient: { code: 2102, status: 400 },
  IOUExpiredTooEarly: { code: 2103, status: 400 },
  InsufficientServicePayment: { code: 2104, status: 400 },
  IOUAlreadyClaimed: { code: 2105, status: 400 },
  UseThisIOU: { code: 2106, status: 400 },
  DepositTooLow: { code: 2107, status: 400 },
  WrongOneToNAddress: { code: 2108, status: 400 },
  NoRouteFound: { code: 2201, status: 404 },
  InconsistentInternalState: { code: 2202, status: 500 },
  AddressNotOnline: { code: 2203, status: 404 },
} as const

export type PfsErrorName = keyof typeof pfsErrors

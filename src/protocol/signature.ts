import { hashMessage, recoverAddress, type Address, type Hex } from 'viem'
import { sign, serializeSignature } from 'viem/accounts'

/** Signs packed data the Raiden way: secp256k1 over EIP-191 `personal_sign` of the raw bytes, v in {27, 28}. */
export async function signPacked(privateKey: Hex, data: Hex): Promise<Hex> {
  const signature = await sign({ hash: hashMessage({ raw: data }), privateKey })
  return serializeSignature(signature)
}

/** The address that signed `data` (EIP-191) with `signature`. */
export async function recoverPackedSigner(data: Hex, signature: Hex): Promise<Address> {
  return recoverAddress({ hash: hashMessage({ raw: data }), signature })
}

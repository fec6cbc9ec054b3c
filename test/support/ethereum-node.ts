import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import {
  decodeAbiParameters,
  encodeFunctionData,
  erc6492SignatureValidatorByteCode,
  getAddress,
  isErc6492Signature,
  parseErc6492Signature,
  recoverAddress,
  type Hex,
  type LocalAccount,
} from "viem";

export interface ContractWallet {
  address: Hex;
  owner: LocalAccount;
  /** The factory and its calldata that deploy the wallet (ERC-6492's wrapper names them). */
  factory: Hex;
  factoryData: Hex;
}

export interface EthereumNode {
  url: string;
  chainId: number;
  /** A smart-contract wallet owned by `owner`'s key: deployed already, or counterfactual (its factory would deploy it). */
  addWallet(owner: LocalAccount, options: { deployed: boolean }): ContractWallet;
  /** Answers every request 503 (down) or works again. */
  setDown(down: boolean): void;
  /** The JSON-RPC methods asked so far. */
  methods: string[];
  close(): Promise<void>;
}

const FACTORY = "0x00000000000000000000000000000000000fac70" as Hex;
const IS_VALID_SIGNATURE = "0x1626ba7e";

/**
 * An Ethereum node on 127.0.0.1 speaking JSON-RPC for what a wallet sign-in asks of one:
 * eth_chainId, and eth_call of a contract wallet's isValidSignature (ERC-1271) or of
 * ERC-6492's universal validator (its creation code and constructor arguments, run without
 * deploying). The wallets are simple ERC-1271 contracts that accept their owner key's
 * signature of the hash; the validator's behaviour is the EIP's reference contract's
 * (deploy through the factory when the signature is wrapped and the wallet has no code yet,
 * then ask the wallet; ecrecover for an address without code).
 */
export async function startEthereumNode(chainId = 8453): Promise<EthereumNode> {
  const deployed = new Map<string, ContractWallet>();
  const counterfactual = new Map<string, ContractWallet>();
  const methods: string[] = [];
  let down = false;
  let next = 1;

  const walletAccepts = async (wallet: ContractWallet, hash: Hex, signature: Hex) => {
    try {
      return getAddress(await recoverAddress({ hash, signature })) === wallet.owner.address;
    } catch {
      return false;
    }
  };

  const call = async (tx: { to?: Hex; data: Hex }): Promise<{ result?: Hex; error?: { code: number; message: string } }> => {
    if (tx.to) {
      const wallet = deployed.get(getAddress(tx.to));
      if (!wallet) return { result: "0x" }; // no code at the address: the call returns nothing
      if (!tx.data.startsWith(IS_VALID_SIGNATURE)) return { error: { code: 3, message: "execution reverted" } };
      const [hash, signature] = decodeAbiParameters([{ type: "bytes32" }, { type: "bytes" }], `0x${tx.data.slice(10)}`);
      const yes = await walletAccepts(wallet, hash, signature);
      return { result: `${yes ? IS_VALID_SIGNATURE : "0xffffffff"}${"0".repeat(56)}` as Hex };
    }
    if (!tx.data.startsWith(erc6492SignatureValidatorByteCode)) return { error: { code: 3, message: "execution reverted" } };
    const [signer, hash, signature] = decodeAbiParameters(
      [{ type: "address" }, { type: "bytes32" }, { type: "bytes" }],
      `0x${tx.data.slice(erc6492SignatureValidatorByteCode.length)}`,
    );
    const address = getAddress(signer);
    let wallet = deployed.get(address);
    let inner = signature;
    if (isErc6492Signature(signature)) {
      const wrapped = parseErc6492Signature(signature);
      inner = wrapped.signature;
      if (!wallet) {
        // The factory call runs within this call only: nothing stays deployed.
        const made = counterfactual.get(address);
        if (!made || getAddress(wrapped.address!) !== made.factory || wrapped.data !== made.factoryData) {
          return { error: { code: 3, message: "execution reverted: SignatureValidator: deployment" } };
        }
        wallet = made;
      }
    }
    if (wallet) return { result: (await walletAccepts(wallet, hash, inner)) ? "0x01" : "0x00" };
    try {
      return { result: getAddress(await recoverAddress({ hash, signature: inner })) === address ? "0x01" : "0x00" };
    } catch {
      return { error: { code: 3, message: "execution reverted: SignatureValidator#recoverSigner: invalid signature length" } };
    }
  };

  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", async () => {
      if (down) return void res.writeHead(503).end();
      const request = JSON.parse(body) as { id: number; method: string; params: unknown[] };
      methods.push(request.method);
      let reply: { result?: unknown; error?: { code: number; message: string } };
      if (request.method === "eth_chainId") reply = { result: `0x${chainId.toString(16)}` };
      else if (request.method === "eth_call") reply = await call(request.params[0] as { to?: Hex; data: Hex });
      else reply = { error: { code: -32601, message: "the method does not exist" } };
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: request.id, ...reply }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));

  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    chainId,
    methods,
    addWallet(owner, options) {
      const salt = BigInt(next++);
      const address = getAddress(`0x${(0xa11ce000n + salt).toString(16).padStart(40, "0")}`);
      const factoryData = encodeFunctionData({
        abi: [{ type: "function", name: "createAccount", inputs: [{ type: "address" }, { type: "uint256" }], outputs: [{ type: "address" }], stateMutability: "nonpayable" }],
        functionName: "createAccount",
        args: [owner.address, salt],
      });
      const wallet = { address, owner, factory: getAddress(FACTORY), factoryData };
      (options.deployed ? deployed : counterfactual).set(address, wallet);
      return wallet;
    },
    setDown: (value) => void (down = value),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

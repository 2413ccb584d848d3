// Signs an A2A Agent Card (specification §8.4) with a fresh key, by one of
// two signers independent of lmosnode, for node/a2abridge's tests of the
// card signature check of imports:
//
//   - "jose": jose (FlattenedSign) over the card without signatures and
//     without empty members, canonicalised by the canonicalize package
//     (RFC 8785);
//   - "sdk": the official A2A JavaScript SDK's generateAgentCardSignature.
//
//   node sign.mjs '{"signer": "jose", "alg": "ES256", "kid": "k1", "jku": "https://…/jwks.json", "card": {…}}'
//
// It prints {"card": <the signed card>, "jwks": {"keys": [<the public JWK>]}}.
import * as jose from "jose";
import canonicalize from "canonicalize";
import { generateAgentCardSignature } from "@a2a-js/sdk";

// The argument is one request or an array of them (one process, less
// start-up); the output is one result or an array of them.
const arg = JSON.parse(process.argv[2]);

// The spec's default-value removal: empty strings, nulls, empty arrays
// and objects go, recursively.
const clean = (v) => {
  if (v === "" || v === null || v === undefined) return undefined;
  if (Array.isArray(v)) {
    const a = v.map(clean).filter((x) => x !== undefined);
    return a.length ? a : undefined;
  }
  if (typeof v === "object") {
    const o = {};
    for (const [k, x] of Object.entries(v)) {
      const c = clean(x);
      if (c !== undefined) o[k] = c;
    }
    return Object.keys(o).length ? o : undefined;
  }
  return v;
};

async function sign(req) {
  const { publicKey, privateKey } = await jose.generateKeyPair(req.alg, { extractable: true });
  const jwk = { ...(await jose.exportJWK(publicKey)), kid: req.kid, alg: req.alg, use: "sig" };
  const header = { alg: req.alg, typ: "JOSE", kid: req.kid, ...(req.jku ? { jku: req.jku } : {}) };
  let card;
  if (req.signer === "sdk") {
    card = await generateAgentCardSignature(privateKey, header)(req.card);
  } else {
    const { signatures, ...unsigned } = req.card;
    const payload = new TextEncoder().encode(canonicalize(clean(unsigned) ?? {}));
    const jws = await new jose.FlattenedSign(payload).setProtectedHeader(header).sign(privateKey);
    card = { ...req.card, signatures: [...(signatures ?? []), { protected: jws.protected, signature: jws.signature }] };
  }
  return { card, jwks: { keys: [jwk] } };
}

console.log(JSON.stringify(Array.isArray(arg) ? await Promise.all(arg.map(sign)) : await sign(arg)));

// sigstore-js's side of Weir's interoperability test (host/src/trust/sigstore_js_tests.rs), offline
// and key-based. Run with NODE_PATH naming the node_modules that setup.sh installs.
//
//   node interop.cjs verify BUNDLE PUBLIC_PEM
//     Verifies the bundle with @sigstore/verify's Verifier, whose only trust is PUBLIC_PEM, found
//     by cosign's hint for it; no TUF root, and no transparency log entry, SCT or timestamp
//     required. Prints {"payloadType", "subjects"} of its DSSE statement as JSON; on refusal
//     prints the error's code and message to stderr and exits 1.
//   node interop.cjs sign DIGEST DIR
//     Signs cosign's signature statement naming DIGEST (sha256:HEX, with the annotation
//     team=payments) with a new P-256 key through @sigstore/sign's DSSE bundle builder, no
//     witness (no log, no timestamp authority). Writes DIR/bundle.json and DIR/key.pub.
'use strict';

const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { bundleFromJSON, bundleToJSON } = require('@sigstore/bundle');
const { DSSEBundleBuilder } = require('@sigstore/sign');
const { Verifier, toSignedEntity, toTrustMaterial } = require('@sigstore/verify');

const IN_TOTO = 'application/vnd.in-toto+json';

// cosign's hint for a public key: base64 of the SHA-256 of its DER (SubjectPublicKeyInfo) form.
function hint(publicKey) {
  const der = publicKey.export({ type: 'spki', format: 'der' });
  return crypto.createHash('sha256').update(der).digest('base64');
}

function verify(bundlePath, keyPath) {
  const publicKey = crypto.createPublicKey(fs.readFileSync(keyPath));
  const bundle = bundleFromJSON(JSON.parse(fs.readFileSync(bundlePath, 'utf8')));
  // A trusted root with no authority at all: the one key is the whole trust.
  const noAuthorities = {
    certificateAuthorities: [],
    timestampAuthorities: [],
    tlogs: [],
    ctlogs: [],
  };
  const keys = {
    [hint(publicKey)]: { rawBytes: publicKey.export({ type: 'spki', format: 'der' }) },
  };
  const verifier = new Verifier(toTrustMaterial(noAuthorities, keys), {
    tlogThreshold: 0,
    ctlogThreshold: 0,
    timestampThreshold: 0,
  });
  verifier.verify(toSignedEntity(bundle));
  const envelope = bundle.content.dsseEnvelope;
  const statement = JSON.parse(envelope.payload.toString('utf8'));
  console.log(JSON.stringify({ payloadType: envelope.payloadType, subjects: statement.subject }));
}

async function sign(digest, dir) {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const pem = publicKey.export({ type: 'spki', format: 'pem' });
  const signer = {
    sign: async (data) => ({
      signature: crypto.sign('sha256', data, privateKey),
      key: { $case: 'publicKey', publicKey: pem, hint: hint(publicKey) },
    }),
  };
  const statement = {
    _type: 'https://in-toto.io/Statement/v1',
    subject: [
      {
        digest: { sha256: digest.replace(/^sha256:/, '') },
        annotations: { team: 'payments' },
      },
    ],
    predicateType: 'https://sigstore.dev/cosign/sign/v1',
    predicate: {},
  };
  const builder = new DSSEBundleBuilder({ signer, witnesses: [] });
  const bundle = await builder.create({ data: Buffer.from(JSON.stringify(statement)), type: IN_TOTO });
  fs.writeFileSync(path.join(dir, 'bundle.json'), JSON.stringify(bundleToJSON(bundle)));
  fs.writeFileSync(path.join(dir, 'key.pub'), pem);
}

async function main() {
  const [command, ...args] = process.argv.slice(2);
  if (command === 'verify' && args.length === 2) return verify(...args);
  if (command === 'sign' && args.length === 2) return sign(...args);
  throw new Error('usage: interop.cjs verify BUNDLE PUBLIC_PEM | sign DIGEST DIR');
}

main().catch((e) => {
  console.error(`${e.code ?? e.name}: ${e.message}`);
  process.exit(1);
});

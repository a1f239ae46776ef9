-- Identities (docs/security.md): API tokens, hashed at rest, each mapping to a principal of a
-- tenant with roles; workers bound to the token they registered with; jobs and batches owned
-- by the principal that submitted them; every stored evaluation names the worker identity
-- that produced it.
CREATE TABLE api_tokens (
  token_id    uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  token_hash  text NOT NULL UNIQUE,        -- sha256 (hex) of the secret; the secret is not kept
  principal   text NOT NULL,
  tenant      text NOT NULL,
  roles       text[] NOT NULL CHECK (cardinality(roles) > 0 AND
                roles <@ ARRAY['researcher', 'trainer', 'operator', 'admin', 'worker']),
  created_by  text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz,                 -- NULL: never
  revoked_at  timestamptz
);
CREATE INDEX api_tokens_principal_idx ON api_tokens (principal);

ALTER TABLE workers ADD COLUMN token_id uuid REFERENCES api_tokens;
ALTER TABLE evaluations ADD COLUMN worker_token_id uuid REFERENCES api_tokens;
ALTER TABLE jobs ADD COLUMN owner text, ADD COLUMN tenant text;
ALTER TABLE batches ADD COLUMN owner text, ADD COLUMN tenant text;

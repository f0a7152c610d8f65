import { createAdminToken } from '@keyhook/core';
import { parseOptions } from '../args.js';
import { type Command, UsageError } from '../io.js';

export const DEFAULT_SECRET_ENV = 'KEYHOOK_ADMIN_SECRET';

// HS256 with a shorter key is guessable; core's createAdminToken and adminSession refuse it too.
const MIN_SECRET_BYTES = 32;

export const adminTokenCommand: Command = {
  name: 'admin-token',
  summary: 'Print an admin-session JWT for a tenant (development, scripts, tests)',
  help: `Usage: keyhook admin-token --tenant <id> [--secret-env <NAME>] [--issuer <iss>]
                           [--audience <aud>] [--subject <sub>] [--tenant-claim <claim>]
                           [--expires-in <seconds>]

Prints an HS256 admin-session JWT for the tenant, signed with your adminSession.secret, as an
admin portal would mint one. The secret is read from an environment variable, never from a flag:
flags end up in shell history and in the process list.

Options:
  --tenant <id>            The tenant the token administers. Required.
  --secret-env <NAME>      The environment variable holding the secret (at least 32 bytes).
                           Default: ${DEFAULT_SECRET_ENV}.
  --issuer <iss>           The iss claim; match adminSession.issuer when you set it.
  --audience <aud>         The aud claim; match adminSession.audience when you set it.
  --subject <sub>          Who holds the session. Default: dev-admin.
  --tenant-claim <claim>   The claim carrying the tenant; match adminSession.tenantClaim.
                           Default: tenant_id.
  --expires-in <seconds>   Lifetime, 1 to 86400. Default: 3600.
  -h, --help               Show this help.
`,
  async run(args, io) {
    // Refused by name, with the reason, rather than as one more unknown option.
    if (args.some((arg) => arg === '--secret' || arg.startsWith('--secret='))) {
      throw new UsageError(
        `there is no --secret flag (flags end up in shell history): put the secret in ${DEFAULT_SECRET_ENV}, ` +
          'or in the variable --secret-env names',
      );
    }
    const values = parseOptions(
      args,
      {
        tenant: { type: 'string' },
        'secret-env': { type: 'string', default: DEFAULT_SECRET_ENV },
        issuer: { type: 'string' },
        audience: { type: 'string' },
        subject: { type: 'string' },
        'tenant-claim': { type: 'string' },
        'expires-in': { type: 'string' },
      },
      'pass the tenant with --tenant <id>',
    );
    if (values.tenant === undefined) throw new UsageError('--tenant <id> is required');
    const expiresIn = values['expires-in'];
    if (expiresIn !== undefined && !/^\d+$/.test(expiresIn)) {
      throw new UsageError('--expires-in must be a whole number of seconds');
    }
    const secretEnv = values['secret-env'];
    const secret = io.env[secretEnv];
    if (secret === undefined || secret === '') {
      throw new Error(`set ${secretEnv} to your adminSession.secret (at least ${MIN_SECRET_BYTES} bytes)`);
    }
    // Checked here to name the variable; core's own message names its option instead.
    if (Buffer.byteLength(secret) < MIN_SECRET_BYTES) {
      throw new Error(
        `${secretEnv} holds fewer than ${MIN_SECRET_BYTES} bytes; adminSession.secret needs at least that`,
      );
    }
    try {
      const token = await createAdminToken({
        secret,
        tenantId: values.tenant,
        issuer: values.issuer,
        audience: values.audience,
        subject: values.subject,
        tenantClaim: values['tenant-claim'],
        expiresInSeconds: expiresIn === undefined ? undefined : Number(expiresIn),
      });
      io.stdout.write(`${token}\n`);
    } catch (error) {
      // With the secret checked above, what core refuses with a TypeError is a flag: --tenant or --expires-in.
      if (error instanceof TypeError) throw new UsageError(error.message.replace(/^createAdminToken: /, ''));
      throw error;
    }
  },
};

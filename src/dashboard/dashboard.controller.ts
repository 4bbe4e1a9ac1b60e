import { Controller, Get, Module, Param, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize, resolve, sep } from 'node:path';

/**
 * Where `npm run build` puts the dashboard (vite, from `ui/`): dist/ui beside dist/src. This
 * module runs from dist/src/dashboard/ or, bundled, from dist/src/bundle/: two levels under dist
 * either way.
 */
export const DASHBOARD_DIR = resolve(import.meta.dirname, '../../ui');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
  '.map': 'application/json; charset=utf-8',
};

/** Scripts and styles only from this origin; the page talks only to /graphql. */
const CSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'";

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

/**
 * GET /ui: the dashboard, a single-page app built from `ui/` into dist/ui, fully offline (its
 * routes are in the URL's hash, so the page and /ui/assets/* are all there is). Nothing needs
 * a token: the page asks for one and sends it only with its POSTs to /graphql.
 */
@Controller('ui')
export class DashboardController {
  private readonly cache = new Map<string, Promise<Asset | null>>();

  @Get()
  index(@Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<FastifyReply> {
    return this.serve('index.html', request, reply);
  }

  @Get('assets/:file')
  asset(@Param('file') file: string, @Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<FastifyReply> {
    return this.serve(`assets/${file}`, request, reply);
  }

  private async serve(relative: string, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const asset = await this.load(relative);
    if (!asset) {
      const missing = relative === 'index.html' ? 'the dashboard is not built: run npm run build' : `no such file: ${relative}`;
      return reply.code(404).type('application/json').send({ errors: [{ message: missing, extensions: { code: 'NOT_FOUND' } }] });
    }
    reply.header('Content-Security-Policy', CSP).header('Referrer-Policy', 'no-referrer').header('ETag', asset.etag);
    reply.header('Cache-Control', relative.startsWith('assets/') ? 'public, max-age=31536000, immutable' : 'no-cache');
    if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send();
    return reply.type(asset.type).send(asset.body);
  }

  private load(relative: string): Promise<Asset | null> {
    let pending = this.cache.get(relative);
    if (!pending) {
      const file = normalize(join(DASHBOARD_DIR, relative));
      // Inside the directory itself (`dist/ui-other` starts with `dist/ui` too), and asked by its
      // own name: the router decodes %2F into `:file`, and a name through a made-up folder
      // (`x/../index-….js`, `./index-….js`) reached a real file under a new name each time, each
      // kept in the cache with its own copy of the file.
      pending = file.startsWith(DASHBOARD_DIR + sep) && normalize(relative) === relative
        ? readFile(file).then(
            (body) => ({ body, type: TYPES[extname(file)] ?? 'application/octet-stream', etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` }),
            () => null,
          )
        : Promise.resolve(null);
      if (relative.startsWith('assets/')) {
        // Only the files that exist stay cached (the build's few assets): anyone may ask for any name.
        const asked = pending;
        this.cache.set(relative, asked);
        void asked.then((asset) => {
          if (!asset && this.cache.get(relative) === asked) this.cache.delete(relative);
        });
      }
    }
    return pending;
  }
}

/** GET /ui: the dashboard (see DashboardController). */
@Module({ controllers: [DashboardController] })
export class DashboardModule {}

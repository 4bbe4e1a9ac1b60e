import { Controller, Get, NotFoundException, Param, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { EXPLORER_CSP, EXPLORER_CSS, EXPLORER_JS, explorerHtml } from './explorer.html.js';

const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';

/** The browser builds GraphiQL needs, from the project's own node_modules: name → package, file. */
const VENDOR: Record<string, { pkg: string; file: string; type: string }> = {
  'react.production.min.js': { pkg: 'react', file: 'umd/react.production.min.js', type: JS },
  'react-dom.production.min.js': { pkg: 'react-dom', file: 'umd/react-dom.production.min.js', type: JS },
  'graphiql.min.js': { pkg: 'graphiql', file: 'graphiql.min.js', type: JS },
  'graphiql.min.js.map': { pkg: 'graphiql', file: 'graphiql.min.js.map', type: 'application/json; charset=utf-8' },
  'graphiql.min.css': { pkg: 'graphiql', file: 'graphiql.min.css', type: CSS },
};

interface Asset {
  body: Buffer | string;
  type: string;
  etag: string;
}

const nodeRequire = createRequire(import.meta.url);
const etagOf = (body: Buffer | string) => `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
const inline = (body: string, type: string): Asset => ({ body, type, etag: etagOf(body) });

/**
 * GET /explorer: GraphiQL, fully offline. The page, its script and style, and React, ReactDOM
 * and GraphiQL (read once from node_modules, then kept in memory) are all served from here.
 * Nothing needs a token: the page asks for one and sends it only with its POSTs to /graphql.
 */
@Controller('explorer')
export class ExplorerController {
  private readonly page = inline(explorerHtml({ endpoint: '/graphql', base: '/explorer' }), 'text/html; charset=utf-8');
  private readonly script = inline(EXPLORER_JS, JS);
  private readonly style = inline(EXPLORER_CSS, CSS);
  private readonly vendor = new Map<string, Promise<Asset>>();

  @Get()
  index(@Req() request: FastifyRequest, @Res() reply: FastifyReply): FastifyReply {
    reply.header('Content-Security-Policy', EXPLORER_CSP).header('Referrer-Policy', 'no-referrer');
    return send(request, reply, this.page);
  }

  @Get('explorer.js')
  explorerScript(@Req() request: FastifyRequest, @Res() reply: FastifyReply): FastifyReply {
    return send(request, reply, this.script);
  }

  @Get('explorer.css')
  explorerStyle(@Req() request: FastifyRequest, @Res() reply: FastifyReply): FastifyReply {
    return send(request, reply, this.style);
  }

  @Get('vendor/:name')
  async vendorFile(@Param('name') name: string, @Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<FastifyReply> {
    if (!Object.hasOwn(VENDOR, name)) throw new NotFoundException(`no explorer asset named ${name}`);
    let asset = this.vendor.get(name);
    if (!asset) {
      const { pkg, file, type } = VENDOR[name];
      asset = readFile(join(dirname(nodeRequire.resolve(`${pkg}/package.json`)), file)).then((body) => ({ body, type, etag: etagOf(body) }));
      asset.catch(() => this.vendor.delete(name));
      this.vendor.set(name, asset);
    }
    return send(request, reply, await asset);
  }
}

/** Revalidated on every load (cheap with the ETag), so an upgraded package is picked up at once. */
function send(request: FastifyRequest, reply: FastifyReply, asset: Asset): FastifyReply {
  reply.header('Cache-Control', 'no-cache').header('ETag', asset.etag).header('X-Content-Type-Options', 'nosniff');
  if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send();
  return reply.type(asset.type).send(asset.body);
}

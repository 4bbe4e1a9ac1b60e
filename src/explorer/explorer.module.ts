import { Module } from '@nestjs/common';
import { ExplorerController } from './explorer.controller.js';

/** GET /explorer: the offline GraphiQL explorer (see ExplorerController). */
@Module({ controllers: [ExplorerController] })
export class ExplorerModule {}

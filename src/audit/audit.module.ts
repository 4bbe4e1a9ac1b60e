import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { AuditReadModel } from './audit.read-model.js';
import { AuditResolver } from './audit.resolver.js';

/** The event log read as an audit log of API actions. */
@Module({ imports: [CqrsModule], providers: [AuditReadModel, AuditResolver] })
export class AuditModule {}

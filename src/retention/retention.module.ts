import { Module } from '@nestjs/common';
import { WorkflowsModule } from '../workflows/workflows.module.js';
import { RetentionService } from './retention.service.js';

/** Deletes finished workflows older than RETENTION_DAYS (off by default). */
@Module({
  imports: [WorkflowsModule],
  providers: [RetentionService],
})
export class RetentionModule {}

import { Module } from '@nestjs/common';
import { WorkflowsModule } from '../workflows/workflows.module.js';
import { ExpiredStreams } from './expired-streams.projection.js';
import { RetentionService } from './retention.service.js';

/** Deletes finished workflows older than RETENTION_DAYS (off by default). */
@Module({
  imports: [WorkflowsModule],
  providers: [RetentionService, ExpiredStreams],
})
export class RetentionModule {}

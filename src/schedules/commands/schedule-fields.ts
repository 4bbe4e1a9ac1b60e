import { Field, ID, InputType, Int } from '@nestjs/graphql';
import { IsInt, IsNotEmpty, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { AppScopedInput, PRINTABLE, PRINTABLE_MESSAGE } from '../../graphql/common.types.js';
import { MAX_TIMEZONE_LENGTH } from '../../shared/limits.js';

/** Longest catch-up window accepted (as SCHEDULE_CATCH_UP_MS): 7 days. */
export const MAX_CATCH_UP_WINDOW_MS = 7 * 24 * 3_600_000;

export function CronField(): PropertyDecorator {
  return (target, key) => {
    Field({
      description:
        'Cron expression: 5 fields (minute hour day-of-month month day-of-week) as in standard cron; 6 fields as in the original service (minute hour day-of-month month day-of-week year, the year 1970-2099), so "0 2 * * * *" is daily at 02:00; 7 fields (second minute hour day-of-month month day-of-week year); or a macro (@yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly). Day fields take `L` (last), `W` (nearest weekday), `#` (`MON#2`) and `?` (no specific value: `0 2 ? * MON *` is Mondays); a step may start at a value (`0/15`, `5/20`). E.g. "*/5 * * * *", "0 9 * * MON-FRI", "0 2 L * * 2027", "*/10 * * * * * *". A refused expression names the field at fault in `extensions.cronField`.',
    })(target, key);
    IsString()(target, key);
    IsNotEmpty()(target, key);
    MaxLength(256)(target, key);
    Matches(PRINTABLE, { message: PRINTABLE_MESSAGE })(target, key);
  };
}

export function TimezoneField(): PropertyDecorator {
  return (target, key) => {
    Field(() => String, {
      nullable: true,
      description:
        'IANA time zone the expression is read in (default "UTC"), e.g. "Europe/Paris". Across daylight saving changes, a local time skipped by a jump forward fires once at the first instant after the jump; a local time repeated by a jump back fires once, on its first pass.',
    })(target, key);
    IsOptional()(target, key);
    IsString()(target, key);
    MaxLength(MAX_TIMEZONE_LENGTH)(target, key);
  };
}

export function CatchUpWindowField(): PropertyDecorator {
  return (target, key) => {
    Field(() => Int, {
      nullable: true,
      description:
        'How old (in milliseconds) a missed occurrence may be and still be fired, once, when Baton gets to it late (e.g. after a restart). Older ones are recorded as skipped. Default: the SCHEDULE_CATCH_UP_MS setting (60000); at most 7 days.',
    })(target, key);
    IsOptional()(target, key);
    IsInt()(target, key);
    Min(0)(target, key);
    Max(MAX_CATCH_UP_WINDOW_MS)(target, key);
  };
}

/** appId, environment and a schedule id: the shape of the management inputs. */
@InputType({ isAbstract: true })
export abstract class ScheduleRefInput extends AppScopedInput {
  @Field(() => ID, { description: 'The schedule id scheduleTask or scheduleWorkflow returned.' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(64)
  id: string;
}

import { Field, InputType } from '@nestjs/graphql';
import { Type } from 'class-transformer';
import { IsObject, ValidateNested } from 'class-validator';
import { AppScopedInput } from '../../graphql/common.types.js';
import { WorkflowSelectorInput } from '../workflow.types.js';

/** appId, environment and a selector: the shape of pause, resume and terminate inputs. */
@InputType({ isAbstract: true })
export abstract class SelectorActionInput extends AppScopedInput {
  @Field(() => WorkflowSelectorInput, { description: 'Which workflows: `{ id }`, `{ name }` or `{ name, tag }`.' })
  @IsObject()
  @ValidateNested()
  @Type(() => WorkflowSelectorInput)
  selector: WorkflowSelectorInput;
}

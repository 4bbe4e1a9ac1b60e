import { Alert, Anchor, Badge, Button, Group, Stack, Table, Text, Title } from '@mantine/core';
import { Fragment, useState } from 'react';
import { Scope, gql } from '../api';
import { atLeast, shortId, time, useAction, usePolling, useSession } from '../shared';

const FAILURES = `query($appId: String!, $environment: String!) { failures(appId: $appId, environment: $environment) { kind name error count capped firstSeenAt lastSeenAt ids } }`;

/** Retries many in as few requests as the query-cost limit allows (aliased mutations, 100 per request). */
async function retryAll(scope: Scope, kind: string, ids: string[]): Promise<void> {
  for (let i = 0; i < ids.length; i += 100) {
    const chunk = ids.slice(i, i + 100);
    const fields = chunk.map((id, j) =>
      kind === 'WORKFLOW'
        ? `r${j}: retryWorkflows(input: { appId: $appId, environment: $environment, selector: { id: ${JSON.stringify(id)} } }) { changed }`
        : `r${j}: retryTask(input: { appId: $appId, environment: $environment, id: ${JSON.stringify(id)} }) { id }`,
    );
    await gql(`mutation($appId: String!, $environment: String!) { ${fields.join('\n')} }`, { ...scope });
  }
}

/** Failure groups shown at first, and added by each "Show more". */
const GROUPS_PAGE = 100;

interface Group {
  kind: string;
  name: string;
  error: string;
  count: number;
  capped: boolean;
  firstSeenAt: string;
  lastSeenAt: string;
  ids: string[];
}

/**
 * Retries every failure of a group. The failures query lists a group's 500 most recent ids only:
 * once those are retried, the group is read again and the ids not retried yet are retried, until
 * a read brings none (a retried one that failed again is not retried a second time).
 */
async function retryGroup(scope: Scope, group: Group): Promise<void> {
  const retried = new Set<string>();
  for (let ids = group.ids; ids.length > 0; ) {
    await retryAll(scope, group.kind, ids);
    for (const id of ids) retried.add(id);
    if (!group.capped && retried.size >= group.count) return;
    const { failures } = await gql<{ failures: Group[] }>(FAILURES, { ...scope });
    const now = failures.find((g) => g.kind === group.kind && g.name === group.name && g.error === group.error);
    ids = (now?.ids ?? []).filter((id) => !retried.has(id));
  }
}

export function FailuresPage() {
  const { scope, canControl } = useSession();
  const { data, error, reload } = usePolling(() => gql(FAILURES, scope), [scope.appId, scope.environment]);
  const action = useAction(reload);
  const [open, setOpen] = useState<string | null>(null);
  // Groups rendered, most recent first: a message that names its order makes a group per failure,
  // and 3,000 rows rendered again at each refresh held the page in long tasks of 1.4-2.4 s.
  const [shown, setShown] = useState(GROUPS_PAGE);
  const groups: Group[] = data?.failures ?? [];

  return (
    <Stack>
      <Title order={3}>Failures</Title>
      <Text size="sm" c="dimmed">
        Failed workflows and standalone tasks, grouped by name and error. A retried workflow resumes from its last successful step.
      </Text>
      {(error || action.error) && <Alert color="red">{error ?? action.error}</Alert>}
      {data && data.failures.length === 0 && <Alert color="green">Nothing is failed.</Alert>}
      <Table striped data-testid="failures-table">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Kind</Table.Th>
            <Table.Th>Name</Table.Th>
            <Table.Th>Error</Table.Th>
            <Table.Th>Count</Table.Th>
            <Table.Th>First seen</Table.Th>
            <Table.Th>Last seen</Table.Th>
            <Table.Th />
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {groups.slice(0, shown).map((g) => {
            const key = `${g.kind}:${g.name}:${g.error}`;
            return (
              <Fragment key={key}>
                <Table.Tr>
                  <Table.Td>
                    <Badge variant="light">{g.kind}</Badge>
                  </Table.Td>
                  <Table.Td>{g.name}</Table.Td>
                  <Table.Td>
                    <Text c="red" size="sm">
                      {g.error}
                    </Text>
                  </Table.Td>
                  <Table.Td>{atLeast(g.count, g.capped)}</Table.Td>
                  <Table.Td>{time(g.firstSeenAt)}</Table.Td>
                  <Table.Td>{time(g.lastSeenAt)}</Table.Td>
                  <Table.Td>
                    <Group gap="xs" wrap="nowrap">
                      <Button size="xs" variant="default" onClick={() => setOpen(open === key ? null : key)}>
                        {open === key ? 'Hide' : 'Show'}
                      </Button>
                      {canControl && (
                        <Button size="xs" color="orange" onClick={() => action.run(() => retryGroup(scope, g))}>
                          Retry all {atLeast(g.count, g.capped)}
                        </Button>
                      )}
                    </Group>
                  </Table.Td>
                </Table.Tr>
                {open === key &&
                  g.ids.map((id: string) => (
                    <Table.Tr key={id}>
                      <Table.Td />
                      <Table.Td colSpan={4}>
                        {g.kind === 'WORKFLOW' ? <Anchor href={`#/workflows/${id}`}>{id}</Anchor> : <Text ff="monospace" size="sm">{id}</Text>}
                      </Table.Td>
                      <Table.Td colSpan={2}>
                        {canControl && (
                          <Button size="xs" variant="light" color="orange" onClick={() => action.run(() => retryAll(scope, g.kind, [id]))}>
                            Retry {shortId(id)}
                          </Button>
                        )}
                      </Table.Td>
                    </Table.Tr>
                  ))}
              </Fragment>
            );
          })}
        </Table.Tbody>
      </Table>
      {groups.length > shown && (
        <Group>
          <Text size="sm" c="dimmed" data-testid="failures-shown">
            Showing the {shown.toLocaleString('en')} most recent of {groups.length.toLocaleString('en')} groups.
          </Text>
          <Button variant="default" size="xs" onClick={() => setShown((n) => n + GROUPS_PAGE)}>
            Show {Math.min(GROUPS_PAGE, groups.length - shown)} more
          </Button>
        </Group>
      )}
    </Stack>
  );
}

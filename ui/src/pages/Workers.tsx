import { Alert, Badge, Card, Group, Stack, Table, Text, Title } from '@mantine/core';
import { gql } from '../api';
import { time, usePolling, useSession } from '../shared';

const WORKERS = `query($appId: String!, $environment: String!) { workers(appId: $appId, environment: $environment) {
  workers { workerId workflows tasks connected pollsInFlight firstSeenAt lastSeenAt }
  waiting { kind name count served } } }`;

export function WorkersPage() {
  const { scope } = useSession();
  const { data, error } = usePolling(() => gql(WORKERS, scope), [scope.appId, scope.environment]);
  const overview = data?.workers;
  return (
    <Stack>
      <Title order={3}>Workers</Title>
      <Text size="sm" c="dimmed">
        Worker processes polling {scope.appId} / {scope.environment} on this instance, and the work waiting for them.
      </Text>
      {error && <Alert color="red">{error}</Alert>}
      <Table striped data-testid="workers-table">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Worker</Table.Th>
            <Table.Th>State</Table.Th>
            <Table.Th>Workflows</Table.Th>
            <Table.Th>Tasks</Table.Th>
            <Table.Th>Last seen</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {(overview?.workers ?? []).map((w: any) => (
            <Table.Tr key={w.workerId} data-worker={w.workerId} data-connected={String(w.connected)}>
              <Table.Td ff="monospace">{w.workerId}</Table.Td>
              <Table.Td>
                <Badge color={w.connected ? 'green' : 'gray'} variant="light">
                  {w.connected ? `connected${w.pollsInFlight ? ' · polling' : ''}` : 'gone'}
                </Badge>
              </Table.Td>
              <Table.Td>
                <Text size="xs">{w.workflows.join(', ')}</Text>
              </Table.Td>
              <Table.Td>
                <Text size="xs">{w.tasks.join(', ')}</Text>
              </Table.Td>
              <Table.Td>{time(w.lastSeenAt)}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {overview && overview.workers.length === 0 && <Alert color="yellow">No worker has polled for this app and environment.</Alert>}
      <Card withBorder>
        <Title order={5} mb="xs">
          Work waiting
        </Title>
        {overview && overview.waiting.length === 0 && <Text size="sm">Nothing is waiting for a worker.</Text>}
        <Group>
          {(overview?.waiting ?? []).map((w: any) => (
            <Badge key={`${w.kind}:${w.name}`} color={w.served ? 'blue' : 'red'} variant="light" size="lg">
              {w.kind.toLowerCase()} {w.name}: {w.count} {w.served ? '' : '· no worker'}
            </Badge>
          ))}
        </Group>
      </Card>
    </Stack>
  );
}

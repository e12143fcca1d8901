"""The fruit stand of KubeRay's RayService sample (`ray-service.sample.yaml`, application `fruit_app`,
import path `fruit.deployment_graph`), for the Ray of `tests/ray/requirements.txt`.

KubeRay's sample downloads its code (a `runtime_env.working_dir` URL) and builds it with Serve's deployment
graph API (`InputNode`, `DAGDriver`), which Ray no longer has. Here the same deployments are plain Serve
deployments: `FruitMarket` is the HTTP ingress (it takes the body `["MANGO", 2]` that `DAGDriver` with a
JSON adapter took) and asks the stand of that fruit for the price of the amount. Every stand's price comes
from its `user_config` (`price`), as in the sample: the config's `user_config` replaces the defaults below.

The real Ray heads of the test environment import it from `tests/ray/apps` (on their `PYTHONPATH`).
"""

from typing import Dict, List

from ray import serve
from ray.serve.handle import DeploymentHandle
from starlette.requests import Request


class _Stand:
    """Sells one fruit at the price its `user_config` sets (`reconfigure`), else at its default."""

    default_price: float = 1

    def __init__(self):
        self.price = self.default_price

    def reconfigure(self, config: Dict):
        self.price = config.get("price", self.default_price)

    def check_price(self, amount: float) -> float:
        return self.price * amount


@serve.deployment(user_config={"price": 3})
class MangoStand(_Stand):
    default_price = 1


@serve.deployment(user_config={"price": 2})
class OrangeStand(_Stand):
    default_price = 0.5


@serve.deployment(user_config={"price": 4})
class PearStand(_Stand):
    default_price = 0.75


@serve.deployment(num_replicas=2)
class FruitMarket:
    """Answers `[fruit, amount]` with the price of `amount` of `fruit`, or -1 for a fruit nobody sells."""

    def __init__(self, mango: DeploymentHandle, orange: DeploymentHandle, pear: DeploymentHandle):
        self.stands = {"MANGO": mango, "ORANGE": orange, "PEAR": pear}

    async def check_price(self, fruit: str, amount: float) -> float:
        stand = self.stands.get(fruit)
        if stand is None:
            return -1
        return await stand.check_price.remote(amount)

    async def __call__(self, request: Request) -> float:
        query: List = await request.json()
        fruit, amount = query[0], query[1]
        return await self.check_price(fruit, amount)


deployment_graph = FruitMarket.bind(MangoStand.bind(), OrangeStand.bind(), PearStand.bind())

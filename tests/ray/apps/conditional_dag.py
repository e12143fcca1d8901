"""The calculator of KubeRay's RayService sample (`ray-service.sample.yaml`, application `math_app`, import
path `conditional_dag.serve_dag`), for the Ray of `tests/ray/requirements.txt`.

`Router` is the HTTP ingress: for the body `["ADD", n]` it asks `Adder`, for `["MUL", n]` `Multiplier`, and
answers `"<result> pizzas please!"`. `Adder` adds its `increment` and `Multiplier` multiplies by its `factor`;
both come from the deployment's `user_config` (`reconfigure`), which replaces the value given at bind time,
as in the sample (its config sets `increment: 3` and `factor: 5`, so `["MUL", 3]` gives "15 pizzas please!").

The real Ray heads of the test environment import it from `tests/ray/apps` (on their `PYTHONPATH`).
"""

from typing import Dict

from ray import serve
from ray.serve.handle import DeploymentHandle
from starlette.requests import Request

ADD = "ADD"
MUL = "MUL"


@serve.deployment(user_config={"factor": 3}, ray_actor_options={"num_cpus": 0.1})
class Multiplier:
    def __init__(self, factor: int):
        self.factor = factor

    def reconfigure(self, config: Dict):
        self.factor = config.get("factor", -1)

    def multiply(self, value: int) -> int:
        return value * self.factor


@serve.deployment(user_config={"increment": 2}, ray_actor_options={"num_cpus": 0.1})
class Adder:
    def __init__(self, increment: int):
        self.increment = increment

    def reconfigure(self, config: Dict):
        self.increment = config.get("increment", -1)

    def add(self, value: int) -> int:
        return value + self.increment


@serve.deployment(ray_actor_options={"num_cpus": 0.1})
class Router:
    def __init__(self, multiplier: DeploymentHandle, adder: DeploymentHandle):
        self.multiplier = multiplier
        self.adder = adder

    async def route(self, op: str, value: int) -> str:
        if op == ADD:
            amount = await self.adder.add.remote(value)
        elif op == MUL:
            amount = await self.multiplier.multiply.remote(value)
        else:
            return f"unknown operation {op!r}"
        return f"{amount} pizzas please!"

    async def __call__(self, request: Request) -> str:
        op, value = await request.json()
        return await self.route(op, value)


# The values given at bind time; each deployment's user_config replaces them.
serve_dag = Router.bind(Multiplier.bind(1), Adder.bind(1))
